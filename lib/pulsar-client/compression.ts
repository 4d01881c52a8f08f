/**
 * Decompression of message payloads with Node's own zstd and pure-JavaScript
 * codecs for the rest, so the client installs anywhere. The codecs are the
 * ones Pulsar's producers use: LZ4 raw blocks (no frame), zlib streams (with
 * their header), ZSTD frames, Snappy raw (no framing format).
 *
 * Every codec stops at the size the message's metadata declares: a payload
 * of a few kilobytes can inflate to gigabytes (a decompression bomb), and
 * the broker passes on whatever a producer sent.
 */
import { zstdDecompressSync } from 'node:zlib'
import { unzlibSync } from 'fflate'
import { decompressBlock as lz4DecompressBlock } from 'lz4js'
import { uncompress as snappyUncompress } from 'snappyjs'
import { PulsarError } from './errors.ts'
import { CompressionType } from './proto.ts'

/** Why a payload is refused as soon as its output would pass its declared size. */
const inflatesPast = (uncompressedSize: number) =>
  new Error(`it inflates past the ${uncompressedSize} bytes its metadata says`)

const NAMES: Record<number, string> = { 0: 'NONE', 1: 'LZ4', 2: 'ZLIB', 3: 'ZSTD', 4: 'SNAPPY' }

export const compressionName = (type: number): string => NAMES[type] ?? `compression ${type}`

function inflate(type: number, data: Uint8Array, uncompressedSize: number): Uint8Array {
  switch (type) {
    case CompressionType.LZ4: {
      // Bytes past the end of a typed array are dropped silently: the returned end tells the real size.
      const out = new Uint8Array(uncompressedSize)
      const end = lz4DecompressBlock(data, out, 0, data.length, 0)
      if (end !== uncompressedSize) throw new Error(`the block holds ${end} bytes`)
      return out
    }
    case CompressionType.ZLIB: {
      // Output stops at the buffer's end and what does not fit is dropped silently: one byte of
      // room more than declared tells a payload that inflates past its size from one that fits.
      const out = unzlibSync(data, { out: new Uint8Array(uncompressedSize + 1) })
      if (out.length > uncompressedSize) throw inflatesPast(uncompressedSize)
      return out
    }
    case CompressionType.ZSTD:
      try {
        // Node stops at maxOutputLength, which must be at least 1 (an empty payload is a frame too).
        return zstdDecompressSync(data, { maxOutputLength: Math.max(uncompressedSize, 1) })
      } catch (err) {
        throw (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? inflatesPast(uncompressedSize) : err
      }
    case CompressionType.SNAPPY: {
      const { declared, written } = snappyLengths(data, uncompressedSize)
      if (declared > uncompressedSize || written > uncompressedSize) throw inflatesPast(uncompressedSize)
      if (written !== declared) throw new Error(`its elements write ${written} bytes, its header says ${declared}`)
      return snappyUncompress(data, uncompressedSize)
    }
    default:
      throw new PulsarError('Unsupported', `unknown compression type ${type}`, { retriable: false })
  }
}

/** The payload as the producer wrote it; checks it has exactly `uncompressedSize` bytes. */
export function decompress(type: number, data: Uint8Array, uncompressedSize: number): Uint8Array {
  if (type === CompressionType.NONE) return data
  let out: Uint8Array
  try {
    out = inflate(type, data, uncompressedSize)
  } catch (err) {
    if (err instanceof PulsarError) throw err
    throw new PulsarError(
      'ProtocolError',
      `cannot decompress a ${compressionName(type)} payload: ${(err as Error).message}`,
      {
        retriable: false,
        cause: err,
      },
    )
  }
  if (out.length !== uncompressedSize) {
    throw new PulsarError(
      'ProtocolError',
      `a ${compressionName(type)} payload decompressed to ${out.length} bytes, its metadata says ${uncompressedSize}`,
      { retriable: false },
    )
  }
  return out
}

/**
 * The length a raw Snappy stream declares (its leading varint) and how many
 * bytes its elements write, counted without writing them and no further than
 * past `max`. snappyjs allocates whatever length is declared, drops what is
 * written past it and leaves a shortfall as zeros, so both are checked first.
 */
function snappyLengths(data: Uint8Array, max: number): { declared: number; written: number } {
  let declared = 0
  let pos = 0
  for (let shift = 0; pos < data.length; shift += 7) {
    const byte = data[pos++]!
    declared += (byte & 0x7f) * 2 ** shift
    if (byte < 0x80) break
  }
  let written = 0
  while (pos < data.length && written <= max) {
    const tag = data[pos++]!
    // A literal's length or a copy's, with its 2- or 4-byte offset; a copy with a 1-byte offset is shorter.
    let length = (tag >>> 2) + 1
    switch (tag & 3) {
      case 0:
        // Lengths past 60 follow the tag in 1 to 4 little-endian bytes.
        if (length > 60) {
          const bytes = length - 60
          length = 1
          for (let i = 0; i < bytes; i++) length += (data[pos + i] ?? 0) * 2 ** (8 * i)
          pos += bytes
        }
        pos += length
        break
      case 1:
        length = ((tag >>> 2) & 7) + 4
        pos += 1
        break
      case 2:
        pos += 2
        break
      default:
        pos += 4
    }
    written += length
  }
  return { declared, written }
}
