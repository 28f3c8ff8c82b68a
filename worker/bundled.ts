// Files the Worker cannot read from disk, bundled as text by wrangler.toml's [[rules]]: the admin UI.
// (The Lua scripts come from src/adapters/redis/lua/index.generated.ts, an ordinary module.) A new
// admin UI module (admin/ui/<name>.js) needs one import line here, and its name in `modules`.

import type { AdminAssets } from '../admin/routes.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import access from '../admin/ui/access.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import actions from '../admin/ui/actions.js'
// @ts-expect-error TS7016: bundled as text by wrangler.toml's [[rules]]; TypeScript takes any .js for a module
import app from '../admin/ui/app.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import audit from '../admin/ui/audit.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import bypass from '../admin/ui/bypass.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import common from '../admin/ui/common.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import conflict from '../admin/ui/conflict.js'
import html from '../admin/ui/index.html'
// @ts-expect-error TS7016: bundled as text, as app.js
import live from '../admin/ui/live.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import page from '../admin/ui/page.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import polling from '../admin/ui/polling.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import report from '../admin/ui/report.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import rooms from '../admin/ui/rooms.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import schedule from '../admin/ui/schedule.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import settings from '../admin/ui/settings.js'
// @ts-expect-error TS7016: bundled as text, as app.js
import signin from '../admin/ui/signin.js'
import css from '../admin/ui/style.css'
// @ts-expect-error TS7016: bundled as text, as app.js
import views from '../admin/ui/views.js'

export const ADMIN_ASSETS: AdminAssets = {
  html,
  css,
  modules: {
    'access.js': access,
    'actions.js': actions,
    'app.js': app,
    'audit.js': audit,
    'bypass.js': bypass,
    'common.js': common,
    'conflict.js': conflict,
    'live.js': live,
    'page.js': page,
    'polling.js': polling,
    'report.js': report,
    'rooms.js': rooms,
    'schedule.js': schedule,
    'settings.js': settings,
    'signin.js': signin,
    'views.js': views,
  },
}
