import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { ImpactValue } from 'axe-core';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's serious and critical findings on the page as it stands. axe is evaluated through the DevTools protocol,
 * past the page's Content-Security-Policy (which allows no inline script).
 */
export async function seriousViolations(page: Page) {
  const source = await axeSource;
  const result = (await page.evaluate(
    `(async () => { ${source}; const r = await axe.run(document); return { passes: r.passes.length, violations: r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' ')) })) }; })()`,
  )) as { passes: number; violations: { id: string; impact: ImpactValue; nodes: string[] }[] };
  // axe ran its rules: a page it could not check would pass nothing.
  expect(result.passes).toBeGreaterThan(10);
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
