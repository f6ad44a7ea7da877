/**
 * Modern HTTP tool calls mirror a tool's `x-mcp-header` parameters into
 * `Mcp-Param-*` headers (2026-07-28 basic/transports/streamable-http). This
 * keeps each tool's header list, and leaves out a tool whose annotations
 * break the spec's rules, with a warning naming it and why.
 */
import { headerParamsOf, type HeaderParam } from '../../protocol/rev2026-07-28/headers.ts';

export class ToolHeaders {
  #byTool = new Map<string, HeaderParam[]>();

  /** The `Mcp-Param-*` list of one tool, if it has any. */
  of(tool: string): HeaderParam[] | undefined {
    return this.#byTool.get(tool);
  }

  /** The tools of one page that may be advertised; `warn` hears of each one left out. */
  accept(tools: unknown[], warnings: string[], warn?: (message: string) => void): unknown[] {
    return tools.filter((t) => {
      const tool = t as { name: string; inputSchema?: unknown };
      const r = headerParamsOf(tool.inputSchema);
      if (!r.ok) {
        const message = `left out tool ${JSON.stringify(tool.name)}: ${r.reason}`;
        warnings.push(message);
        warn?.(message);
        this.#byTool.delete(tool.name);
        return false;
      }
      if (r.params.length) this.#byTool.set(tool.name, r.params);
      else this.#byTool.delete(tool.name);
      return true;
    });
  }
}
