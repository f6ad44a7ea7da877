/// <reference lib="dom" />
// A configured server's tools as its saved catalogue holds them
// (GET /v1/mcp/servers/{name}/tools): read without opening a session or
// dialling the server. Each tool with its name, the first line of its
// description (the rest on demand), its parameters and its input schema;
// the server's instructions the same way. Everything here is the server's
// text: shown as text (htm escapes it), never rendered as markup.

import { api, problemOf, serverPath } from './api.js';
import { html, useEffect, useRef, useState } from './vendor.js';
import { toolsLabel } from '../shared/labels.js';
import { Alert, Badge, Busy, Clipped, Hidden, asText, useFocusOnShow } from './ui.js';

/** A tool the entry's enabledTools / disabledTools keep from the model. */
const FILTERED = /** @type {import('../shared/labels.js').Label} */ ({
  text: 'kept from the model by the entry',
  tone: 'off',
  symbol: '○',
});

/** A parameter's type in a word or two: `string`, `number | null`, `array`, `one of 3`, `any`. @param {any} p @returns {string} */
export function typeOf(p) {
  if (!p || typeof p !== 'object') return 'any';
  if (typeof p.type === 'string') return p.type;
  if (Array.isArray(p.type)) return p.type.map(String).join(' | ');
  if (Array.isArray(p.enum)) return `one of ${p.enum.length}`;
  const alts = p.anyOf ?? p.oneOf;
  if (Array.isArray(alts)) return alts.map((/** @type {any} */ a) => typeOf(a)).join(' | ');
  return 'any';
}

/**
 * The parameters of an input schema: each property's name, type, whether it
 * is required and its description, in the schema's order.
 * @param {any} schema
 * @returns {Array<{ name: string, type: string, required: boolean, description: string }>}
 */
export function paramsOf(schema) {
  const props = schema && typeof schema === 'object' && schema.properties && typeof schema.properties === 'object' ? schema.properties : {};
  const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
  return Object.entries(props).map(([name, p]) => ({
    name,
    type: typeOf(p),
    required: required.has(name),
    description: typeof p?.description === 'string' ? p.description : '',
  }));
}

/**
 * A parameter's description, its first line until asked (none when it has none).
 * @param {{ name: string, description: string }} p
 */
const paramDescription = (p) =>
  p.description ? html`<${Clipped} className="param-description" text=${p.description} what=${`the description of ${p.name}`} />` : null;

/**
 * One tool: name (and title), whether the entry keeps it from the model,
 * the first line of its description, its parameters and, folded, its
 * input schema. A session's view lists its advertised tools with it too.
 * @param {{ tool: any, server?: string }} p
 */
export function Tool({ tool, server }) {
  const params = paramsOf(tool.inputSchema);
  const name = asText(tool.name);
  return html`<li class="tool" data-tool=${tool.name}>
    <h3 class="tool-name"><code>${name}</code>${tool.title ? html` <span class="tool-title">${asText(tool.title)}</span>` : null}</h3>
    ${tool.enabled === false ? html`<p><${Badge} label=${FILTERED} /></p>` : null}
    ${
      tool.description
        ? html`<${Clipped} className="description" text=${tool.description} what=${`the description of ${name}`} />`
        : html`<p class="empty">No description.</p>`
    }
    ${
      params.length
        ? html`<ul class="params" aria-label=${`Parameters of ${name}`}>
            ${params.map(
              (p) =>
                html`<li key=${p.name}>
                  <code class="param-name">${asText(p.name)}</code>
                  <span class="param-type">${asText(p.type)}${p.required ? ', required' : ''}</span>
                  ${paramDescription(p)}
                </li>`,
            )}
          </ul>`
        : html`<p class="empty">No parameters.</p>`
    }
    <details>
      <summary>Input schema<${Hidden} text=${` of ${name}${server ? ` (${server})` : ''}`} /></summary>
      <pre class="schema" tabindex="0">${asText(JSON.stringify(tool.inputSchema, null, 2))}</pre>
    </details>
  </li>`;
}

/** How many of each the catalogue lists besides tools, in words. @param {any} c */
const othersOf = (c) =>
  [
    [c.resources, 'resource'],
    [c.resourceTemplates, 'resource template'],
    [c.prompts, 'prompt'],
  ]
    .map(([n, w]) => `${n} ${w}${n === 1 ? '' : 's'}`)
    .join(', ');

/** The tools view (#/tools/NAME). @param {{ name: string }} p */
export function ToolsView({ name }) {
  /** @type {{ current: HTMLHeadingElement | null }} */
  const heading = useRef(null);
  useFocusOnShow(heading);
  const [c, setC] = useState(/** @type {any} */ (null));
  const [problem, setProblem] = useState(/** @type {{ code: string, message: string } | null} */ (null));
  useEffect(() => {
    api('GET', serverPath(name, '/tools')).then(
      (r) => setC(r.body),
      (err) => setProblem(problemOf(err)),
    );
  }, [name]);

  let body = null;
  if (!c) body = problem ? null : html`<${Busy} text="Loading…" />`;
  else if (c.tools === null) {
    body = html`<p class="empty">
      No catalogue is saved for ${asText(name)} as it is configured now: it has not been reached yet, or its entry changed since. Saving it,
      or enabling it, tries the server.
    </p>`;
  } else {
    const info = c.serverInfo;
    body = html` <p class="catalogue-facts">
        ${toolsLabel(c.tools.length)},
        ${othersOf(c)}${
          info ? html`; the server calls itself <code>${asText(info.title ?? info.name)}</code> ${asText(info.version)}` : null
        }${c.discoveredAt ? html`; discovered <time datetime=${c.discoveredAt}>${new Date(c.discoveredAt).toLocaleString()}</time>` : null}.
      </p>
      ${
        c.instructions
          ? html`<h2>Instructions</h2>
              <${Clipped} className="instructions" text=${c.instructions} what=${`the instructions of ${name}`} />`
          : null
      }
      <h2>Tools</h2>
      ${
        c.tools.length
          ? html`<ul class="tools-list">
              ${c.tools.map((/** @type {any} */ t) => html`<${Tool} key=${t.name} tool=${t} server=${name} />`)}
            </ul>`
          : html`<p class="empty">The server lists no tool.</p>`
      }`;
  }
  return html`<section aria-labelledby="tools-title">
    <h1 id="tools-title" ref=${heading} tabindex="-1">Tools of ${asText(name)}</h1>
    <p><a href="#/servers">All servers</a></p>
    <p class="lead">From the catalogue saved when the server was last reached: no session is opened and the server is not started.</p>
    <${Alert} problem=${problem} />
    ${body}
  </section>`;
}
