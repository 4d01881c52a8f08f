/**
 * The public entry of the `toolbridge` package: what a function author
 * imports to write a tool service. Everything else in the package is the
 * bridge itself and may change without notice.
 */
export {
  BAD_REQUEST_ERROR,
  defineToolService,
  INVALID_ARGUMENTS_ERROR,
  isChunkStream,
  lambdaStreaming,
  MISSING_CONFIG_ERROR,
  type Declarations,
  type FieldDeclaration,
  type ToolEvent,
  type ToolResult,
  type ToolServiceDefinition,
  type Typed,
} from './handler.ts'
export { ARGUMENT_TYPES, type ArgumentType, type ResponseMode } from './tool-service-schema.ts'
