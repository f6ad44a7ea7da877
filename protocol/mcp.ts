/**
 * MCP result shapes shared by both eras (tools, resources, prompts), as zod
 * schemas. They check what Albedo relies on and pass the rest through: the
 * server is untrusted, but a field Albedo does not use is not an error.
 */
import { z } from 'zod';

/** 2026-07-28: every result may say what kind it is; a result without it is complete. */
export const resultTypeSchema = z.enum(['complete', 'input_required']).or(z.string());
export function resultTypeOf(result: Record<string, unknown>): string {
  return typeof result.resultType === 'string' ? result.resultType : 'complete';
}

const objectSchema = z.record(z.string(), z.unknown());

export const toolSchema = z.looseObject({
  name: z.string().min(1),
  title: z.string().optional(),
  description: z.string().optional(),
  inputSchema: objectSchema,
  outputSchema: objectSchema.optional(),
  annotations: objectSchema.optional(),
});
export const resourceSchema = z.looseObject({
  uri: z.string(),
  name: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export const resourceTemplateSchema = z.looseObject({
  uriTemplate: z.string(),
  name: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
});
export const promptSchema = z.looseObject({
  name: z.string().min(1),
  title: z.string().optional(),
  description: z.string().optional(),
  arguments: z.array(z.looseObject({ name: z.string(), description: z.string().optional(), required: z.boolean().optional() })).optional(),
});

export type Tool = z.infer<typeof toolSchema>;
export type Resource = z.infer<typeof resourceSchema>;
export type ResourceTemplate = z.infer<typeof resourceTemplateSchema>;
export type Prompt = z.infer<typeof promptSchema>;

const cursor = z.string().optional();
export const listSchemas = {
  'tools/list': z.looseObject({ tools: z.array(toolSchema), nextCursor: cursor }),
  'resources/list': z.looseObject({ resources: z.array(resourceSchema), nextCursor: cursor }),
  'resources/templates/list': z.looseObject({ resourceTemplates: z.array(resourceTemplateSchema), nextCursor: cursor }),
  'prompts/list': z.looseObject({ prompts: z.array(promptSchema), nextCursor: cursor }),
} as const;
export type ListMethod = keyof typeof listSchemas;
/** The field of each list result that holds the items. */
export const LIST_FIELD = {
  'tools/list': 'tools',
  'resources/list': 'resources',
  'resources/templates/list': 'resourceTemplates',
  'prompts/list': 'prompts',
} as const satisfies Record<ListMethod, string>;
/** Follow `nextCursor` at most this many pages (docs/design.md, "Bounds"). */
export const MAX_LIST_PAGES = 100;

export const callToolResultSchema = z.looseObject({
  content: z.array(z.looseObject({ type: z.string() })).default([]),
  structuredContent: objectSchema.optional(),
  isError: z.boolean().optional(),
});
export const readResourceResultSchema = z.looseObject({
  contents: z.array(z.looseObject({ uri: z.string() })),
});
export const getPromptResultSchema = z.looseObject({
  description: z.string().optional(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })),
});
export type CallToolResult = z.infer<typeof callToolResultSchema>;
export type ReadResourceResult = z.infer<typeof readResourceResultSchema>;
export type GetPromptResult = z.infer<typeof getPromptResultSchema>;

export const implementationSchema = z.looseObject({ name: z.string(), version: z.string(), title: z.string().optional() });
export type Implementation = z.infer<typeof implementationSchema>;

/** Server capabilities, as both eras declare them (the parts Albedo reads). */
export const serverCapabilitiesSchema = z.looseObject({
  tools: z.looseObject({ listChanged: z.boolean().optional() }).optional(),
  resources: z.looseObject({ listChanged: z.boolean().optional(), subscribe: z.boolean().optional() }).optional(),
  prompts: z.looseObject({ listChanged: z.boolean().optional() }).optional(),
  logging: objectSchema.optional(),
  completions: objectSchema.optional(),
});
export type ServerCapabilities = z.infer<typeof serverCapabilitiesSchema>;

/** Everything a connection discovered, as the catalogue holds it. */
export interface Catalogue {
  tools: Tool[];
  resources: Resource[];
  resourceTemplates: ResourceTemplate[];
  prompts: Prompt[];
}
