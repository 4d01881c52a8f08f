/**
 * Decompression of message payloads with pure-JavaScript codecs, so the
 * client installs anywhere. The codecs are the ones Pulsar's producers use:
 * LZ4 raw blocks (no frame), zlib streams (with their header), ZSTD frames,
 * Snappy raw (no framing format).
 */
import { unzlibSync } from 'fflate'
import { decompress as zstdDecompress } from 'fzstd'
import { decompressBlock as lz4DecompressBlock } from 'lz4js'
import { uncompress as snappyUncompress } from 'snappyjs'
import { PulsarError } from './errors.ts'
import { CompressionType } from './proto.ts'

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
      if (out.length > uncompressedSize)
        throw new Error(`it inflates past the ${uncompressedSize} bytes its metadata says`)
      return out
    }
    case CompressionType.ZSTD:
      // Given an output buffer, fzstd returns all of it however much it filled: let it size its own.
      return zstdDecompress(data)
    case CompressionType.SNAPPY:
      return snappyUncompress(data) as Uint8Array
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
