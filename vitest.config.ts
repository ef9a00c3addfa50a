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
    },
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
