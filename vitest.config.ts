import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    env: {
      NODE_ENV: 'test',
      JWT_SECRET: 'logbook-test-secret-0123456789abcdef',
      JWT_ISSUER: 'logbook-local',
      JWT_AUDIENCE: 'logbook',
      ENROLLMENT_KEY_SEAL_KEY: 'bG9nYm9vay10ZXN0LXNlYWwta2V5LTAxMjM0NTY3ODk=',
    },
    // A bound for a test that hangs, not a guess of its speed: tests wait for events, and a loaded machine is slow.
    testTimeout: 60_000,
    // Much of a test file's time is waiting (child processes, a browser, its own PostgreSQL): three files at once keep
    // two cores busy, where the default (cores - 1) runs one.
    maxWorkers: 3,
    hookTimeout: 60_000,
  },
});
