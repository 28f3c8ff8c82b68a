import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // What a test may take before the runner gives up on it: the sales run on manual clocks, so no
    // result depends on it, but workerd and PostgreSQL tests on a slow shared machine have taken over
    // a minute (the Worker's stepped opening in test/eta.test.ts, 60 s on a clean-clone run).
    testTimeout: 180_000,
    hookTimeout: 120_000,
  },
})
