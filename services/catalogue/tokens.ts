/**
 * Token estimates for what a session costs the model's context (issue 13,
 * "Context accounting"): characters / 4, rounded up — the rule of thumb
 * providers quote for English text and JSON, close enough to compare
 * servers and modes, with no tokenizer to load (each provider has its own).
 * A definition is counted as the JSON the harness sends (name, description,
 * schema).
 */
import type { ModelTool } from '../../protocol/catalogue.ts';

export const CHARS_PER_TOKEN = 4;

/** Estimated tokens of `chars` characters. */
export const tokensOf = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

/** Estimated tokens of one definition as the model is sent it. */
export const definitionTokens = (tool: ModelTool): number => tokensOf(JSON.stringify(tool).length);

/** Estimated tokens of a list of definitions. */
export function definitionsTokens(tools: readonly ModelTool[]): number {
  let n = 0;
  for (const t of tools) n += definitionTokens(t);
  return n;
}
