/**
 * A metric's last samples as a small line chart in SVG built from values (no chart library; the page's CSP allows no
 * inline style, so sizes are SVG attributes). The chart is an image whose text alternative names the samples' range
 * and the last value; the item's threshold, when it has one, is a dashed line.
 */
const svgNs = 'http://www.w3.org/2000/svg';

function svg(tag: string, attributes: Record<string, string | number>, ...children: Node[]) {
  const element = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

interface Sample {
  value: number;
  timestamp: string;
}

const width = 240;
const height = 56;
const pad = 4;

/** The chart of `samples` (oldest first), with `threshold` drawn when given; `label` names the metric. */
export function sparkline(
  samples: readonly Sample[],
  label: string,
  options: { threshold?: number; unit?: string } = {},
): SVGSVGElement {
  const unit = options.unit ?? '';
  const values = samples.map((s) => s.value);
  const bounds = [...values, ...(options.threshold === undefined ? [] : [options.threshold])];
  let low = Math.min(...bounds);
  let high = Math.max(...bounds);
  if (unit === '%') {
    low = Math.min(low, 0);
    high = Math.max(high, 100);
  }
  if (high === low) high = low + 1;
  const times = samples.map((s) => Date.parse(s.timestamp));
  const first = times[0] ?? 0;
  const span = Math.max(1, (times.at(-1) ?? 0) - first);
  const x = (t: number) => pad + ((t - first) / span) * (width - 2 * pad);
  const y = (v: number) => height - pad - ((v - low) / (high - low)) * (height - 2 * pad);
  const points = samples.map((s, i) => `${x(times[i]!).toFixed(1)},${y(s.value).toFixed(1)}`).join(' ');
  const last = samples.at(-1);
  const text =
    samples.length === 0
      ? `${label}: no samples`
      : `${label}: ${samples.length} samples from ${new Date(first).toLocaleString()} to ${new Date(
          times.at(-1)!,
        ).toLocaleString()}, lowest ${format(Math.min(...values), unit)}, highest ${format(
          Math.max(...values),
          unit,
        )}, last ${format(last!.value, unit)}${
          options.threshold === undefined ? '' : `; threshold ${format(options.threshold, unit)}`
        }`;
  const children: Node[] = [svg('rect', { x: 0, y: 0, width, height, class: 'spark-track' })];
  if (options.threshold !== undefined)
    children.push(
      svg('line', {
        x1: pad,
        x2: width - pad,
        y1: y(options.threshold),
        y2: y(options.threshold),
        class: 'spark-threshold',
      }),
    );
  if (samples.length === 1)
    children.push(svg('circle', { cx: width / 2, cy: y(last!.value), r: 2.5, class: 'spark-dot' }));
  else if (samples.length > 1) {
    children.push(svg('polyline', { points, class: 'spark-line' }));
    children.push(svg('circle', { cx: x(times.at(-1)!), cy: y(last!.value), r: 2.5, class: 'spark-dot' }));
  }
  return svg(
    'svg',
    { class: 'sparkline', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': text },
    svg('title', {}, document.createTextNode(text)),
    ...children,
  ) as SVGSVGElement;
}

/** A metric value with its unit: percentages to one decimal, bytes in GB. */
export function format(value: number, unit: string): string {
  if (unit === 'bytes') return `${(value / 1e9).toFixed(1)} GB`;
  return `${Number.isInteger(value) ? value : value.toFixed(1)}${unit === '%' ? ' %' : ''}`;
}
