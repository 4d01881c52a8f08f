/**
 * Frames of the Pulsar binary protocol, all sizes big-endian:
 *
 *   simple:  [totalSize u32][commandSize u32][BaseCommand]
 *   payload: [totalSize u32][commandSize u32][BaseCommand]
 *            [0x0e01 u16][CRC32C u32][metadataSize u32][MessageMetadata][payload]
 *
 * `totalSize` counts everything after itself; the CRC32C covers everything
 * after itself. A broker that adds broker-entry metadata puts
 * `[0x0e02 u16][size u32][BrokerEntryMetadata]` before the 0x0e01 magic.
 */
import { crc32c } from './crc32c.ts'
import { PulsarError } from './errors.ts'
import { decode, encode, MessageMetadata, type MessageMetadata as Metadata } from './proto.ts'

const MAGIC_CRC32C = 0x0e01
const MAGIC_BROKER_ENTRY_METADATA = 0x0e02

export function simpleFrame(command: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(8 + command.length)
  frame.writeUInt32BE(4 + command.length, 0)
  frame.writeUInt32BE(command.length, 4)
  frame.set(command, 8)
  return frame
}

export function payloadFrame(command: Uint8Array, metadata: Metadata, payload: Uint8Array): Buffer {
  const meta = encode(MessageMetadata, metadata)
  const headerSize = 8 + command.length
  const frame = Buffer.allocUnsafe(headerSize + 2 + 4 + 4 + meta.length + payload.length)
  frame.writeUInt32BE(frame.length - 4, 0)
  frame.writeUInt32BE(command.length, 4)
  frame.set(command, 8)
  frame.writeUInt16BE(MAGIC_CRC32C, headerSize)
  const checked = headerSize + 6
  frame.writeUInt32BE(meta.length, checked)
  frame.set(meta, checked + 4)
  frame.set(payload, checked + 4 + meta.length)
  frame.writeUInt32BE(crc32c(frame.subarray(checked)), headerSize + 2)
  return frame
}

/** The message part of a payload frame. */
export interface MessagePart {
  metadata: Metadata
  payload: Uint8Array
  /** False when the frame carried a CRC32C that does not match. */
  checksumOk: boolean
}

/** One frame from the wire: its command bytes, and the message part if it has one. */
export interface Frame {
  command: Uint8Array
  message: MessagePart | undefined
}

function protocolError(message: string): PulsarError {
  return new PulsarError('ProtocolError', message, { retriable: true })
}

/** Splits a frame (without its totalSize field) into command and message part. */
export function parseFrame(frame: Buffer): Frame {
  if (frame.length < 4) throw protocolError(`frame of ${frame.length} bytes is too short`)
  const commandSize = frame.readUInt32BE(0)
  let offset = 4 + commandSize
  if (offset > frame.length)
    throw protocolError(`command of ${commandSize} bytes overruns its ${frame.length}-byte frame`)
  const command = frame.subarray(4, offset)
  if (offset === frame.length) return { command, message: undefined }
  if (frame.readUInt16BE(offset) === MAGIC_BROKER_ENTRY_METADATA) {
    offset += 6 + frame.readUInt32BE(offset + 2)
  }
  let checksumOk = true
  if (frame.readUInt16BE(offset) === MAGIC_CRC32C) {
    const expected = frame.readUInt32BE(offset + 2)
    offset += 6
    checksumOk = crc32c(frame.subarray(offset)) === expected
  }
  const metadataSize = frame.readUInt32BE(offset)
  const metadataEnd = offset + 4 + metadataSize
  if (metadataEnd > frame.length) throw protocolError(`message metadata of ${metadataSize} bytes overruns its frame`)
  const metadata = decode<Metadata>(MessageMetadata, frame.subarray(offset + 4, metadataEnd))
  return { command, message: { metadata, payload: frame.subarray(metadataEnd), checksumOk } }
}

/**
 * Cuts a byte stream into frames. Chunks are kept as they come and joined
 * once a whole frame is there, so a large message costs one copy.
 */
export class FrameDecoder {
  private chunks: Buffer[] = []
  private buffered = 0
  private readonly maxFrameBytes: number

  constructor(maxFrameBytes: number) {
    this.maxFrameBytes = maxFrameBytes
  }

  /** Feeds bytes; returns the frames now complete (each without its totalSize field). */
  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk)
    this.buffered += chunk.length
    const frames: Buffer[] = []
    while (this.buffered >= 4) {
      const head = this.chunks[0]!.length >= 4 ? this.chunks[0]! : this.join()
      const size = head.readUInt32BE(0)
      if (size > this.maxFrameBytes)
        throw protocolError(`frame of ${size} bytes is over the limit of ${this.maxFrameBytes}`)
      if (this.buffered < 4 + size) break
      const all = this.chunks.length === 1 ? this.chunks[0]! : this.join()
      frames.push(all.subarray(4, 4 + size))
      const rest = all.subarray(4 + size)
      this.chunks = rest.length > 0 ? [rest] : []
      this.buffered = rest.length
    }
    return frames
  }

  private join(): Buffer {
    const joined = Buffer.concat(this.chunks, this.buffered)
    this.chunks = [joined]
    return joined
  }
}
