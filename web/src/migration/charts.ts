/**
 * Bar charts as SVG built from values (no chart library): the page's CSP allows no inline style, so sizes are SVG
 * attributes. Every chart is an image with a text alternative; the figures are also shown as text beside it.
 */
const svgNs = 'http://www.w3.org/2000/svg';

function svg(tag: string, attributes: Record<string, string | number>, ...children: Node[]) {
  const element = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  element.append(...children);
  return element;
}

export interface Segment {
  /** A class of the stylesheet giving the segment its colour (bar-active, bar-clean, …). */
  kind: string;
  label: string;
  value: number;
}

/**
 * One horizontal bar of `segments` side by side, on a scale of `scale` (the whole width); its title lists them.
 * An empty scale draws an empty track.
 */
export function stackedBar(segments: Segment[], scale: number, label: string): SVGSVGElement {
  const width = 1000;
  let x = 0;
  const rects = segments
    .filter((segment) => segment.value > 0 && scale > 0)
    .map((segment) => {
      const w = (segment.value / scale) * width;
      const rect = svg(
        'rect',
        { x, y: 0, width: w, height: 20, class: `bar-segment ${segment.kind}` },
        svg('title', {}, document.createTextNode(`${segment.label}: ${segment.value}`)),
      );
      x += w;
      return rect;
    });
  const text = segments.map((segment) => `${segment.label} ${segment.value}`).join(', ');
  return svg(
    'svg',
    {
      class: 'bar-chart',
      viewBox: `0 0 ${width} 20`,
      preserveAspectRatio: 'none',
      role: 'img',
      'aria-label': `${label}: ${text}`,
    },
    svg('rect', { x: 0, y: 0, width, height: 20, class: 'bar-track' }),
    ...rects,
  ) as SVGSVGElement;
}
