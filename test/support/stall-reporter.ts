import type { Reporter, TestCase, TestModule } from 'vitest/node';

/**
 * Ends a run that stopped moving, naming where it stopped, instead of leaving CI to its own time limit. Tests and
 * hooks are bounded by their timeouts (vitest.config.ts); what is not — a test file's setup, a blocked event loop, a
 * teardown — would otherwise hang the run silently. Bounds on a hang, not guesses of speed: no test starts or ends for
 * `stalledAfterMs`, or the run ended and the process is still there after `teardownMs`.
 */
const stalledAfterMs = 5 * 60_000;
const teardownMs = 3 * 60_000;

export default class StallReporter implements Reporter {
  private readonly running = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  onTestRunStart() {
    this.moved();
  }

  onTestModuleQueued(module: TestModule) {
    this.running.add(module.moduleId);
    this.moved();
  }

  onTestModuleEnd(module: TestModule) {
    this.running.delete(module.moduleId);
    this.moved();
  }

  onTestCaseReady(_test: TestCase) {
    this.moved();
  }

  onTestCaseResult(_test: TestCase) {
    this.moved();
  }

  onTestRunEnd() {
    this.arm(teardownMs, () => `The run ended ${teardownMs / 1000} s ago and its teardown has not`);
  }

  private moved() {
    this.arm(stalledAfterMs, () => {
      const files = [...this.running].map((id) => id.replace(`${process.cwd()}/`, ''));
      return `No test started or ended for ${stalledAfterMs / 1000} s; still running: ${files.join(', ') || 'none'}`;
    });
  }

  private arm(ms: number, message: () => string) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      console.error(`\n${message()}`);
      process.exit(1);
    }, ms).unref();
  }
}
