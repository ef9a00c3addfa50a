import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (measured in a full run on 2 cores: from 80 s down to 20 s each). A fresh clone has no
 * durations from an earlier run, so vitest would start them wherever their names fall and one started last ends the
 * run alone; started first, the short files fill the workers around them.
 */
const longest = [
  'test/docs/readme-examples.test.ts',
  'test/infra/local/main.test.ts',
  'test/tools/audit-verify.test.ts',
  'test/web/viewer.test.ts',
  'test/web/first-hour.test.ts',
  'test/tools/bootstrap.test.ts',
  'test/demo/agent.test.ts',
  'test/web/custom-fields-import.test.ts',
  'test/functions/audit/export.test.ts',
  'test/web/devices.test.ts',
  'test/infra/local/audit-faults.test.ts',
  'test/tools/tampering.test.ts',
  'test/infra/local/database-faults.test.ts',
  'test/tools/retention.test.ts',
  'test/functions/posture/posture.test.ts',
  'test/shared/db/data-api-contract.test.ts',
  'test/functions/migrate/run.test.ts',
  'test/infra/local/idempotency-faults.test.ts',
];

const rank = (spec: TestSpecification) => {
  const at = longest.findIndex((path) => spec.moduleId.endsWith(path));
  return at < 0 ? longest.length : at;
};

/** Vitest's order (each project's files together), with each project's longest files first. */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const position = new Map(sorted.map((spec, i) => [spec, i]));
    const projectStart = new Map<string, number>();
    for (const [spec, i] of position) if (!projectStart.has(spec.project.name)) projectStart.set(spec.project.name, i);
    return [...sorted].sort(
      (a, b) =>
        projectStart.get(a.project.name)! - projectStart.get(b.project.name)! ||
        rank(a) - rank(b) ||
        position.get(a)! - position.get(b)!,
    );
  }
}
