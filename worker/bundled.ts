// Files the Worker cannot read from disk, bundled as text by wrangler.toml's [[rules]]:
// the Lua scripts (the same files Node reads) and the admin UI.

import type { AdminAssets } from '../admin/routes.js'
// @ts-expect-error TS7016: bundled as text by wrangler.toml's [[rules]]; TypeScript takes any .js for a module
import js from '../admin/ui/app.js'
import html from '../admin/ui/index.html'
import css from '../admin/ui/style.css'
import end from '../src/adapters/redis/lua/end-2.lua'
import endAll from '../src/adapters/redis/lua/end-all-2.lua'
import poll from '../src/adapters/redis/lua/poll-7.lua'
import renew from '../src/adapters/redis/lua/renew-2.lua'
import sample from '../src/adapters/redis/lua/sample-5.lua'
import settingsCas from '../src/adapters/redis/lua/settings-cas-1.lua'
import stats from '../src/adapters/redis/lua/stats-4.lua'
import { defineScripts, type Scripts } from '../src/adapters/redis/scripts.js'

export const LUA: Scripts = defineScripts({
  'poll-7.lua': poll,
  'renew-2.lua': renew,
  'end-2.lua': end,
  'end-all-2.lua': endAll,
  'settings-cas-1.lua': settingsCas,
  'sample-5.lua': sample,
  'stats-4.lua': stats,
})

export const ADMIN_ASSETS: AdminAssets = { html, js, css }
