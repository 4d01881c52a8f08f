/** The templates `toolbridge init` offers (folders under templates/). */
export const TEMPLATES = ['minimal', 'streaming', 'existing-api', 'http-function'] as const
export type TemplateName = (typeof TEMPLATES)[number]
