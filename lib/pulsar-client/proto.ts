/**
 * The protobuf messages of Pulsar's binary protocol that this client speaks,
 * declared by hand: field numbers and types are facts of the wire
 * (PulsarApi.proto). Only the fields the client reads or writes are listed;
 * a reader skips the rest. Encoding and decoding go through
 * @bufbuild/protobuf's BinaryWriter and BinaryReader, driven by these tables.
 */
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire'

/** `uint64` reads as a number (ids, counts, times); `bigint` keeps all 64 bits (ledger and entry ids). */
type Scalar = 'string' | 'bytes' | 'bool' | 'int32' | 'enum' | 'uint32' | 'uint64' | 'bigint'

interface Field {
  no: number
  type: Scalar | Schema
  repeated?: boolean
}

export interface Schema {
  readonly byNumber: Map<number, [string, Field]>
  readonly inOrder: [string, Field][]
}

function schema(fields: Record<string, [number, Scalar | Schema] | [number, Scalar | Schema, 'repeated']>): Schema {
  const inOrder = Object.entries(fields)
    .map(([name, [no, type, repeated]]): [string, Field] => [name, { no, type, repeated: repeated === 'repeated' }])
    .sort((a, b) => a[1].no - b[1].no)
  return { inOrder, byNumber: new Map(inOrder.map((entry) => [entry[1].no, entry])) }
}

// ---------------------------------------------------------------- encode / decode

function writeValue(writer: BinaryWriter, field: Field, value: unknown): void {
  const { no, type } = field
  if (typeof type === 'object') {
    writer.tag(no, WireType.LengthDelimited).fork()
    writeMessage(writer, type, value as Record<string, unknown>)
    writer.join()
    return
  }
  switch (type) {
    case 'string':
      writer.tag(no, WireType.LengthDelimited).string(value as string)
      break
    case 'bytes':
      writer.tag(no, WireType.LengthDelimited).bytes(value as Uint8Array)
      break
    case 'bool':
      writer.tag(no, WireType.Varint).bool(value as boolean)
      break
    case 'int32':
    case 'enum':
      writer.tag(no, WireType.Varint).int32(value as number)
      break
    case 'uint32':
      writer.tag(no, WireType.Varint).uint32(value as number)
      break
    case 'uint64':
    case 'bigint':
      writer.tag(no, WireType.Varint).uint64(value as number | bigint)
      break
  }
}

function writeMessage(writer: BinaryWriter, s: Schema, value: Record<string, unknown>): void {
  for (const [name, field] of s.inOrder) {
    const v = value[name]
    if (v === undefined) continue
    if (field.repeated) for (const item of v as unknown[]) writeValue(writer, field, item)
    else writeValue(writer, field, v)
  }
}

export function encode(s: Schema, value: object): Uint8Array {
  const writer = new BinaryWriter()
  writeMessage(writer, s, value as Record<string, unknown>)
  return writer.finish()
}

function readValue(reader: BinaryReader, type: Scalar | Schema): unknown {
  if (typeof type === 'object') return decode(type, reader.bytes())
  switch (type) {
    case 'string':
      return reader.string()
    case 'bytes':
      return reader.bytes()
    case 'bool':
      return reader.bool()
    case 'int32':
    case 'enum':
      return reader.int32()
    case 'uint32':
      return reader.uint32()
    case 'uint64':
      return Number(reader.uint64())
    case 'bigint':
      return BigInt(reader.uint64())
  }
}

/** Decodes `bytes` as `s`; fields not in the table are skipped, absent ones stay undefined. */
export function decode<T = Record<string, unknown>>(s: Schema, bytes: Uint8Array): T {
  const reader = new BinaryReader(bytes)
  const out: Record<string, unknown> = {}
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag()
    const entry = s.byNumber.get(no)
    if (!entry) {
      reader.skip(wireType, no)
      continue
    }
    const [name, field] = entry
    const value = readValue(reader, field.type)
    if (field.repeated) ((out[name] ??= []) as unknown[]).push(value)
    else out[name] = value
  }
  return out as T
}

// ---------------------------------------------------------------- messages

export interface KeyValue {
  key: string
  value: string
}
/** PulsarApi.proto: `message KeyValue { required string key = 1; required string value = 2; }` */
export const KeyValue = schema({ key: [1, 'string'], value: [2, 'string'] })

export interface MessageIdData {
  ledgerId: bigint
  entryId: bigint
  partition?: number
  batch_index?: number
  batch_size?: number
}
/**
 * PulsarApi.proto:
 *
 *   message MessageIdData {
 *     required uint64 ledgerId = 1;
 *     required uint64 entryId = 2;
 *     optional int32 partition = 3 [default = -1];
 *     optional int32 batch_index = 4 [default = -1];
 *     optional int32 batch_size = 6;
 *   }
 *
 * (ack_set = 5 and first_chunk_message_id = 7 are neither read nor written.)
 */
export const MessageIdData = schema({
  ledgerId: [1, 'bigint'],
  entryId: [2, 'bigint'],
  partition: [3, 'int32'],
  batch_index: [4, 'int32'],
  batch_size: [6, 'int32'],
})

export const CompressionType = { NONE: 0, LZ4: 1, ZLIB: 2, ZSTD: 3, SNAPPY: 4 } as const

export interface MessageMetadata {
  producer_name: string
  sequence_id: number
  publish_time: number
  properties?: KeyValue[]
  replicated_from?: string
  partition_key?: string
  compression?: number
  uncompressed_size?: number
  /** Present (even as 1) only on batches. */
  num_messages_in_batch?: number
  event_time?: number
  /** Only whether there are any matters here: this client cannot decrypt. */
  encryption_keys?: Uint8Array[]
  schema_version?: Uint8Array
  marker_type?: number
  null_value?: boolean
  uuid?: string
  num_chunks_from_msg?: number
  chunk_id?: number
}
/**
 * PulsarApi.proto `message MessageMetadata`: three required fields,
 *
 *   required string producer_name = 1;
 *   required uint64 sequence_id = 2;
 *   required uint64 publish_time = 3;
 *
 * and the rest optional or repeated, with defaults compression = NONE,
 * uncompressed_size = 0, num_messages_in_batch = 1, event_time = 0.
 * `encryption_keys` is `repeated EncryptionKeys` there; read here as bytes,
 * since only whether there are any matters.
 */
export const MessageMetadata = schema({
  producer_name: [1, 'string'],
  sequence_id: [2, 'uint64'],
  publish_time: [3, 'uint64'],
  properties: [4, KeyValue, 'repeated'],
  replicated_from: [5, 'string'],
  partition_key: [6, 'string'],
  compression: [8, 'enum'],
  uncompressed_size: [9, 'uint32'],
  num_messages_in_batch: [11, 'int32'],
  event_time: [12, 'uint64'],
  encryption_keys: [13, 'bytes', 'repeated'],
  schema_version: [16, 'bytes'],
  marker_type: [20, 'int32'],
  null_value: [25, 'bool'],
  uuid: [26, 'string'],
  num_chunks_from_msg: [27, 'int32'],
  chunk_id: [29, 'int32'],
})

export interface SingleMessageMetadata {
  properties?: KeyValue[]
  partition_key?: string
  payload_size: number
  compacted_out?: boolean
  event_time?: number
  sequence_id?: number
  null_value?: boolean
}
/**
 * PulsarApi.proto `message SingleMessageMetadata` (one message inside a batch):
 * `required int32 payload_size = 3;` and the rest optional or repeated.
 */
export const SingleMessageMetadata = schema({
  properties: [1, KeyValue, 'repeated'],
  partition_key: [2, 'string'],
  payload_size: [3, 'int32'],
  compacted_out: [4, 'bool'],
  event_time: [5, 'uint64'],
  sequence_id: [8, 'uint64'],
  null_value: [9, 'bool'],
})

const FeatureFlags = schema({
  supports_auth_refresh: [1, 'bool'],
  supports_broker_entry_metadata: [2, 'bool'],
  supports_partial_producer: [3, 'bool'],
  supports_topic_watchers: [4, 'bool'],
})
const AuthData = schema({ auth_method_name: [1, 'string'], auth_data: [2, 'bytes'] })

export const SubType = { Exclusive: 0, Shared: 1, Failover: 2, Key_Shared: 3 } as const
export const InitialPosition = { Latest: 0, Earliest: 1 } as const
export const LookupType = { Redirect: 0, Connect: 1, Failed: 2 } as const
export const AckType = { Individual: 0, Cumulative: 1 } as const
export const ValidationError = {
  UncompressedSizeCorruption: 0,
  DecompressionError: 1,
  ChecksumMismatch: 2,
  BatchDeSerializeError: 3,
  DecryptionError: 4,
} as const

/** The commands, each with its BaseCommand type number (also its field number in BaseCommand). */
const COMMANDS = {
  connect: [
    2,
    schema({
      client_version: [1, 'string'],
      auth_data: [3, 'bytes'],
      protocol_version: [4, 'int32'],
      auth_method_name: [5, 'string'],
      proxy_to_broker_url: [6, 'string'],
      feature_flags: [10, FeatureFlags],
    }),
  ],
  connected: [
    3,
    schema({ server_version: [1, 'string'], protocol_version: [2, 'int32'], max_message_size: [3, 'int32'] }),
  ],
  subscribe: [
    4,
    schema({
      topic: [1, 'string'],
      subscription: [2, 'string'],
      subType: [3, 'enum'],
      consumer_id: [4, 'uint64'],
      request_id: [5, 'uint64'],
      consumer_name: [6, 'string'],
      durable: [8, 'bool'],
      metadata: [10, KeyValue, 'repeated'],
      initialPosition: [13, 'enum'],
    }),
  ],
  producer: [
    5,
    schema({
      topic: [1, 'string'],
      producer_id: [2, 'uint64'],
      request_id: [3, 'uint64'],
      producer_name: [4, 'string'],
      epoch: [8, 'uint64'],
      user_provided_producer_name: [9, 'bool'],
    }),
  ],
  send: [6, schema({ producer_id: [1, 'uint64'], sequence_id: [2, 'uint64'], num_messages: [3, 'int32'] })],
  send_receipt: [7, schema({ producer_id: [1, 'uint64'], sequence_id: [2, 'uint64'], message_id: [3, MessageIdData] })],
  send_error: [
    8,
    schema({ producer_id: [1, 'uint64'], sequence_id: [2, 'uint64'], error: [3, 'enum'], message: [4, 'string'] }),
  ],
  message: [9, schema({ consumer_id: [1, 'uint64'], message_id: [2, MessageIdData], redelivery_count: [3, 'uint32'] })],
  ack: [
    10,
    schema({
      consumer_id: [1, 'uint64'],
      ack_type: [2, 'enum'],
      message_id: [3, MessageIdData, 'repeated'],
      validation_error: [4, 'enum'],
    }),
  ],
  flow: [11, schema({ consumer_id: [1, 'uint64'], messagePermits: [2, 'uint32'] })],
  unsubscribe: [12, schema({ consumer_id: [1, 'uint64'], request_id: [2, 'uint64'] })],
  success: [13, schema({ request_id: [1, 'uint64'] })],
  error: [14, schema({ request_id: [1, 'uint64'], error: [2, 'enum'], message: [3, 'string'] })],
  close_producer: [15, schema({ producer_id: [1, 'uint64'], request_id: [2, 'uint64'] })],
  close_consumer: [16, schema({ consumer_id: [1, 'uint64'], request_id: [2, 'uint64'] })],
  producer_success: [
    17,
    schema({ request_id: [1, 'uint64'], producer_name: [2, 'string'], producer_ready: [6, 'bool'] }),
  ],
  ping: [18, schema({})],
  pong: [19, schema({})],
  redeliver: [20, schema({ consumer_id: [1, 'uint64'], message_ids: [2, MessageIdData, 'repeated'] })],
  partitioned_metadata: [21, schema({ topic: [1, 'string'], request_id: [2, 'uint64'] })],
  partitioned_metadata_response: [
    22,
    schema({
      partitions: [1, 'uint32'],
      request_id: [2, 'uint64'],
      response: [3, 'enum'],
      error: [4, 'enum'],
      message: [5, 'string'],
    }),
  ],
  lookup: [
    23,
    schema({
      topic: [1, 'string'],
      request_id: [2, 'uint64'],
      authoritative: [3, 'bool'],
      advertised_listener_name: [7, 'string'],
    }),
  ],
  lookup_response: [
    24,
    schema({
      brokerServiceUrl: [1, 'string'],
      brokerServiceUrlTls: [2, 'string'],
      response: [3, 'enum'],
      request_id: [4, 'uint64'],
      authoritative: [5, 'bool'],
      error: [6, 'enum'],
      message: [7, 'string'],
      proxy_through_service_url: [8, 'bool'],
    }),
  ],
  reached_end_of_topic: [27, schema({ consumer_id: [1, 'uint64'] })],
  active_consumer_change: [31, schema({ consumer_id: [1, 'uint64'], is_active: [2, 'bool'] })],
  auth_challenge: [
    36,
    schema({ server_version: [1, 'string'], challenge: [2, AuthData], protocol_version: [3, 'int32'] }),
  ],
  auth_response: [
    37,
    schema({ client_version: [1, 'string'], response: [2, AuthData], protocol_version: [3, 'int32'] }),
  ],
  ack_response: [
    38,
    schema({ consumer_id: [1, 'uint64'], error: [4, 'enum'], message: [5, 'string'], request_id: [6, 'uint64'] }),
  ],
  topic_migrated: [68, schema({ resource_id: [1, 'uint64'], resource_type: [2, 'enum'] })],
} as const satisfies Record<string, readonly [number, Schema]>

export type CommandName = keyof typeof COMMANDS

const BY_TYPE = new Map<number, [CommandName, Schema]>(
  Object.entries(COMMANDS).map(([name, [type, s]]) => [type, [name as CommandName, s]]),
)

/** What the client reads from the broker, by command. */
export interface Incoming {
  connected: { server_version: string; protocol_version?: number; max_message_size?: number }
  send_receipt: { producer_id: number; sequence_id: number; message_id?: MessageIdData }
  send_error: { producer_id: number; sequence_id: number; error: number; message: string }
  message: { consumer_id: number; message_id: MessageIdData; redelivery_count?: number }
  success: { request_id: number }
  error: { request_id: number; error: number; message: string }
  close_producer: { producer_id: number; request_id: number }
  close_consumer: { consumer_id: number; request_id: number }
  producer_success: { request_id: number; producer_name: string; producer_ready?: boolean }
  ping: Record<string, never>
  pong: Record<string, never>
  partitioned_metadata_response: {
    partitions?: number
    request_id: number
    response?: number
    error?: number
    message?: string
  }
  lookup_response: {
    brokerServiceUrl?: string
    brokerServiceUrlTls?: string
    response?: number
    request_id: number
    authoritative?: boolean
    error?: number
    message?: string
    proxy_through_service_url?: boolean
  }
  reached_end_of_topic: { consumer_id: number }
  active_consumer_change: { consumer_id: number; is_active?: boolean }
  auth_challenge: { server_version?: string; challenge?: { auth_method_name?: string; auth_data?: Uint8Array } }
  ack_response: { consumer_id: number; error?: number; message?: string; request_id?: number }
  topic_migrated: { resource_id: number; resource_type: number }
}

export type Command =
  | { [K in keyof Incoming]: { type: K; body: Incoming[K] } }[keyof Incoming]
  | { type: 'unknown'; typeNumber: number }

/**
 * BaseCommand bytes for one command: `{type, <command>: fields}`. PulsarApi.proto:
 *
 *   message BaseCommand {
 *     required Type type = 1;                  // CONNECT = 2, CONNECTED = 3, ... TOPIC_MIGRATED = 68
 *     optional CommandConnect connect = 2;     // each command at the field number equal to its Type
 *     optional CommandConnected connected = 3;
 *     ...
 *     optional CommandTopicMigrated topicMigrated = 68;
 *   }
 */
export function encodeCommand(name: CommandName, fields: object): Uint8Array {
  const [type, s] = COMMANDS[name]
  const writer = new BinaryWriter()
  writer.tag(1, WireType.Varint).int32(type)
  writer.tag(type, WireType.LengthDelimited).fork()
  writeMessage(writer, s, fields as Record<string, unknown>)
  writer.join()
  return writer.finish()
}

/** Reads a BaseCommand (the message above encodeCommand); a command this client does not handle is `unknown`. */
export function decodeCommand(bytes: Uint8Array): Command {
  const reader = new BinaryReader(bytes)
  let type = -1
  let body: Uint8Array | undefined
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag()
    if (no === 1 && wireType === WireType.Varint) type = reader.int32()
    else if (no > 1 && wireType === WireType.LengthDelimited) body = reader.bytes()
    else reader.skip(wireType, no)
  }
  const known = BY_TYPE.get(type)
  if (!known) return { type: 'unknown', typeNumber: type }
  const [name, s] = known
  return { type: name, body: decode(s, body ?? new Uint8Array(0)) } as Command
}
