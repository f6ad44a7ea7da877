/** What `albedo mcp import` was asked (bin/commands/import.ts parses it; bin/import/run.ts carries it out). */
export interface ImportOptions {
  from: string;
  yes?: boolean;
  disabled?: boolean;
  replace?: boolean;
  json?: boolean;
  jobs?: number;
}

/** How many servers `--yes` tries at once unless `--jobs` says otherwise. */
export const DEFAULT_JOBS = 4;
