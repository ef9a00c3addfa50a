import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that change process state a later file would see (environment variables read once at load, AWS clients
 * bound to a stub's port, mocked modules, counted statements): each runs in a fresh process. Every other file runs in
 * the `shared` project, in a process that keeps its loaded modules from one file to the next, starting each as
 * test/support/shared-process.ts says.
 */
const isolated = [
  'test/functions/auth/user-logins.test.ts',
  'test/functions/live-query/failures.test.ts',
  'test/functions/migrate/**',
  'test/functions/queue/audit-spool.test.ts',
  'test/functions/retention/run.test.ts',
  'test/functions/system/idle.test.ts',
  'test/infra/aws/bundle.test.ts',
  'test/infra/local/audit-file-spool.test.ts',
  'test/infra/local/data-directory.test.ts',
  'test/infra/local/database-faults.test.ts',
  'test/infra/local/http-gateway.test.ts',
  'test/infra/local/main.test.ts',
  'test/infra/local/ws-gateway.test.ts',
  'test/shared/audit/anchors.test.ts',
  'test/shared/audit/writer.test.ts',
  'test/shared/auth/jwt.test.ts',
  'test/shared/auth/key-seal.test.ts',
  'test/shared/db/**',
  'test/shared/observability/**',
  'test/shared/outbound/**',
  'test/shared/queue/**',
  'test/web/entries.test.ts',
];

/**
 * The files that take longest, longest first: each starts at the head of its project, so that none starts last and
 * holds the run's end while the other workers are idle. Their length is not in vitest's own order: the synthesis of
 * the CDK stack and its policy checks (seconds of CPU each) run as the file loads, which vitest counts as import,
 * not duration, and on a fresh clone it knows no duration at all and runs larger files first.
 */
const longFiles = [
  'test/infra/local/main.test.ts',
  'test/infra/local/database-faults.test.ts',
  'test/shared/db/data-api-contract.test.ts',
  'test/functions/migrate/run.test.ts',
  'test/infra/aws/logbook-stack.test.ts',
  'test/infra/aws/identity.test.ts',
  'test/infra/aws/operations.test.ts',
  'test/docs/readme-examples.test.ts',
  'test/functions/system/contract-fuzz.test.ts',
  'test/demo/agent.test.ts',
  'test/tools/audit-verify.test.ts',
  'test/web/first-hour.test.ts',
];

/** vitest's order (projects one after another, in each the files it knows to be longer first), longFiles first in each. */
class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = longFiles.findIndex((file) => spec.moduleId.endsWith(`/${file}`));
      return at === -1 ? longFiles.length : at;
    };
    const projects = new Map<string, TestSpecification[]>();
    for (const spec of await super.sort(files)) {
      const specs = projects.get(spec.project.name) ?? [];
      projects.set(spec.project.name, [...specs, spec]);
    }
    // A project's files stay together: a worker of the shared project is kept only while its next file is one too.
    return [...projects.values()].flatMap((specs) => specs.sort((a, b) => rank(a) - rank(b)));
  }
}

const env = {
  NODE_ENV: 'test',
  JWT_SECRET: 'logbook-test-secret-0123456789abcdef',
  JWT_ISSUER: 'logbook-local',
  JWT_AUDIENCE: 'logbook',
  ENROLLMENT_KEY_SEAL_KEY: 'bG9nYm9vay10ZXN0LXNlYWwta2V5LTAxMjM0NTY3ODk=',
  // A closed agent connection is told offline at once: the tests of the grace itself set it (connections.test.ts).
  PRESENCE_GRACE_SECONDS: '0',
};

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    sequence: { sequencer: LongFilesFirst },
    reporters: ['default', './test/support/stall-reporter.ts'],
    env,
    // A bound for a test that hangs, not a guess of its speed: tests wait for events, and a loaded machine is slow.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Much of a test file's time is waiting (child processes, a browser, its own PostgreSQL): three files at once keep
    // two cores busy, where the default (cores - 1) runs one.
    maxWorkers: 3,
    projects: [
      {
        extends: true,
        test: { name: 'isolated', include: isolated, isolate: true },
      },
      {
        extends: true,
        test: {
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: isolated,
          isolate: false,
          setupFiles: ['test/support/shared-process.ts'],
        },
      },
    ],
  },
});
