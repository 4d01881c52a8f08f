/**
 * Batches: a producer with batching on packs several messages into one
 * entry. Its payload (after decompression) is a run of
 * `[size u32][SingleMessageMetadata][payload of payload_size bytes]`, and
 * MessageMetadata.num_messages_in_batch says how many.
 */
import { PulsarError } from './errors.ts'
import { decode, encode, SingleMessageMetadata, type SingleMessageMetadata as Single } from './proto.ts'

export interface BatchEntry {
  metadata: Single
  payload: Uint8Array
}

export function unpackBatch(payload: Uint8Array, count: number): BatchEntry[] {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength)
  const entries: BatchEntry[] = []
  let offset = 0
  for (let i = 0; i < count; i++) {
    if (offset + 4 > payload.length) throw batchError(`message ${i} of ${count} is missing`)
    const size = view.getUint32(offset)
    const metadataEnd = offset + 4 + size
    if (metadataEnd > payload.length) throw batchError(`the metadata of message ${i} overruns the batch`)
    const metadata = decode<Single>(SingleMessageMetadata, payload.subarray(offset + 4, metadataEnd))
    const end = metadataEnd + (metadata.payload_size ?? 0)
    if (end > payload.length) throw batchError(`the payload of message ${i} overruns the batch`)
    entries.push({ metadata, payload: payload.subarray(metadataEnd, end) })
    offset = end
  }
  return entries
}

/** The inverse of unpackBatch: what a batching producer sends (before compression). */
export function packBatch(entries: { metadata: Omit<Single, 'payload_size'>; payload: Uint8Array }[]): Uint8Array {
  const parts: Uint8Array[] = []
  for (const { metadata, payload } of entries) {
    const meta = encode(SingleMessageMetadata, { ...metadata, payload_size: payload.length })
    const size = new Uint8Array(4)
    new DataView(size.buffer).setUint32(0, meta.length)
    parts.push(size, meta, payload)
  }
  return Buffer.concat(parts)
}

function batchError(message: string): PulsarError {
  return new PulsarError('ProtocolError', `malformed batch: ${message}`, { retriable: false })
}
