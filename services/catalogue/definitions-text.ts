/**
 * Bounded text for the model: descriptions cut with the cut marked, labels
 * quoted so server-provided text cannot pass for Albedo's framing, and the
 * bounded listings of a server's resources, templates and prompts. Lengths
 * are UTF-16 code units (never more than the characters a provider counts);
 * a cut never splits a surrogate pair. Pure functions.
 */
import type { Prompt, Resource, ResourceTemplate } from '../../protocol/mcp.ts';

/** Every description the model sees is at most this long, its cut marker included. */
export const MAX_DESCRIPTION = 1_024;
/** At most this many resources + templates, or prompts, are listed in a pseudo-operation's description. */
export const MAX_LISTED = 50;

const group = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** The first `n` code units of `text`, one fewer when the cut would split a surrogate pair. */
function cutAt(text: string, n: number): string {
  const c = text.charCodeAt(n - 1);
  return text.slice(0, c >= 0xd800 && c <= 0xdbff ? n - 1 : n);
}

/**
 * `text` when it fits in `max`; else its start followed by
 * ` … [cut: 3,210 more characters]`, the whole at most `max` long.
 */
export function boundText(text: string, max = MAX_DESCRIPTION): string {
  if (text.length <= max) return text;
  const marker = (n: number): string => ` … [cut: ${group(n)} more characters]`;
  // The marker's length depends on the count it states: shrink the head until the whole fits (a few rounds at most).
  for (let kept = max - marker(text.length - max).length; kept > 0;) {
    const head = cutAt(text, kept);
    const out = head + marker(text.length - head.length);
    if (out.length <= max) return out;
    kept -= out.length - max;
  }
  return marker(text.length).trim().slice(0, max);
}

/** Server text on one line (runs of whitespace, newlines included, become one space), at most `max` with `…` when cut. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${cutAt(flat, max - 1)}…`;
}

/** A server-provided name as a quoted, escaped label of bounded length, so it reads as data inside Albedo's framing. */
export function label(text: string, max = 64): string {
  return JSON.stringify(text.length <= max ? text : `${cutAt(text, max - 1)}…`);
}

/**
 * Lines under a heading, stopping at MAX_LISTED entries or when the next
 * line and the "more" trailer would pass `budget`; the trailer then says how
 * many were not listed.
 */
function listing(head: string, lines: string[], budget: number, what: string): { text: string; shown: number } {
  const more = (n: number): string => (n > 0 ? `\n… and ${group(n)} more ${what} not listed` : '');
  let out = head;
  let shown = 0;
  // Each line is added only if the trailer for what would remain after it still fits.
  while (shown < lines.length && shown < MAX_LISTED) {
    const line = `\n${lines[shown]}`;
    if (out.length + line.length + more(lines.length - shown - 1).length > budget) break;
    out += line;
    shown++;
  }
  return { text: out + more(lines.length - shown), shown };
}

/** The listing with each entry's description when all entries fit so; else the compact form when it lists more. */
function bestListing(head: string, detailed: string[], compact: string[], what: string): string {
  const full = listing(head, detailed, MAX_DESCRIPTION, what);
  if (full.shown === detailed.length) return boundText(full.text);
  const short = listing(head, compact, MAX_DESCRIPTION, what);
  return boundText(short.shown > full.shown ? short.text : full.text);
}

/**
 * The read_resource description: what it does (`exports`: that binary
 * contents may go to files instead), then the URI templates (few,
 * and each stands for many URIs) and the resources, each with its name and,
 * when everything fits so, a short description; bounded.
 */
export function resourcesDescription(frame: string, resources: Resource[], templates: ResourceTemplate[], exports = false): string {
  const desc = (d: string | undefined): string => (d ? `: ${oneLine(d, 100)}` : '');
  const entries = [
    ...templates.map((r) => ({ head: `- template ${oneLine(r.uriTemplate, 200)} (${oneLine(r.name, 64)})`, desc: desc(r.description) })),
    ...resources.map((r) => ({ head: `- ${oneLine(r.uri, 200)} (${oneLine(r.name, 64)})`, desc: desc(r.description) })),
  ];
  const head =
    `${frame}Reads one resource of this server by its URI: a listed URI, or one made from a URI template (RFC 6570). ` +
    (exports ? 'With export, binary contents are written to files in the working directory instead. ' : '') +
    `${group(resources.length)} resource(s), ${group(templates.length)} template(s):`;
  return bestListing(
    head,
    entries.map((e) => e.head + e.desc),
    entries.map((e) => e.head),
    'resources and templates',
  );
}

/** The get_prompt description: what it does, then each prompt with its arguments (`?` marks optional ones), bounded. */
export function promptsDescription(frame: string, prompts: Prompt[]): string {
  const heads = prompts.map((p) => {
    const args = (p.arguments ?? []).map((a) => `${oneLine(a.name, 40)}${a.required ? '' : '?'}`).join(', ');
    return `- ${oneLine(p.name, 80)}(${oneLine(args, 160)})`;
  });
  const detailed = heads.map((h, i) => (prompts[i]!.description ? `${h}: ${oneLine(prompts[i]!.description!, 100)}` : h));
  const head =
    `${frame}Gets one prompt of this server, filled in with its arguments (strings, by name). ` + `${group(prompts.length)} prompt(s):`;
  return bestListing(head, detailed, heads, 'prompts');
}
