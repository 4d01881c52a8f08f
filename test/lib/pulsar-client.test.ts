/**
 * The Pulsar client's wire pieces, from bytes the tests build: CRC32C,
 * frames (split and joined any way a socket may cut them), the protobuf
 * codecs, batches, and every compression codec a producer may use. No
 * broker: test/transports/pulsar.test.ts runs the client against a real one.
 */
import { deflateSync, zstdCompressSync } from 'node:zlib'
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire'
import { compressBlock, compressBound } from 'lz4js'
import { compress as snappyCompress } from 'snappyjs'
import { describe, expect, it } from 'vitest'
import { packBatch, unpackBatch } from '../../lib/pulsar-client/batch.ts'
import { decompress } from '../../lib/pulsar-client/compression.ts'
import { crc32c } from '../../lib/pulsar-client/crc32c.ts'
import { PulsarError, PulsarServerError } from '../../lib/pulsar-client/errors.ts'
import { FrameDecoder, parseFrame, payloadFrame, simpleFrame } from '../../lib/pulsar-client/frame.ts'
import {
  CompressionType,
  decode,
  decodeCommand,
  encode,
  encodeCommand,
  MessageIdData,
  MessageMetadata,
  SingleMessageMetadata,
} from '../../lib/pulsar-client/proto.ts'
import { thrownBy } from '../support/thrown.ts'

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')
const utf8 = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'))

/** Feeds `bytes` to a decoder in pieces of `size` bytes; returns every frame. */
function feed(bytes: Buffer, size: number, decoder = new FrameDecoder(1 << 20)): Buffer[] {
  const frames: Buffer[] = []
  for (let i = 0; i < bytes.length; i += size) frames.push(...decoder.push(bytes.subarray(i, i + size)))
  return frames
}

/** The PulsarError `run` throws; fails the test when it throws something else or nothing. */
function failure(run: () => unknown): PulsarError {
  try {
    run()
  } catch (err) {
    expect(err).toBeInstanceOf(PulsarError)
    return err as PulsarError
  }
  throw new Error('expected a PulsarError')
}

describe('CRC32C', () => {
  it('gives the check value of the Castagnoli polynomial for "123456789"', () => {
    expect(crc32c(utf8('123456789'))).toBe(0xe3069283)
  })

  it('gives the same checksum over any split of the data, and 0 for nothing', () => {
    const data = new Uint8Array(1000).map((_, i) => (i * 31) & 0xff)
    const whole = crc32c(data)
    for (const cut of [1, 7, 8, 9, 500, 999])
      expect(crc32c(data.subarray(cut), crc32c(data.subarray(0, cut)))).toBe(whole)
    expect(crc32c(new Uint8Array(0))).toBe(0)
  })

  it('matches the bitwise definition on random data of every length up to 64', () => {
    const bitwise = (data: Uint8Array) => {
      let c = 0xffffffff
      for (const byte of data) {
        c ^= byte
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
      }
      return ~c >>> 0
    }
    for (let n = 0; n <= 64; n++) {
      const data = new Uint8Array(n).map(() => Math.floor(Math.random() * 256))
      expect(crc32c(data)).toBe(bitwise(data))
    }
  })
})

describe('protobuf codecs', () => {
  it('round-trips a command, and reads its type from the BaseCommand', () => {
    const bytes = encodeCommand('send_receipt', {
      producer_id: 7,
      sequence_id: 2 ** 40,
      message_id: { ledgerId: 2n ** 63n + 5n, entryId: 9n },
    })
    const command = decodeCommand(bytes)
    expect(command).toEqual({
      type: 'send_receipt',
      body: { producer_id: 7, sequence_id: 2 ** 40, message_id: { ledgerId: 2n ** 63n + 5n, entryId: 9n } },
    })
  })

  it('writes what PulsarApi.proto says: BaseCommand.type = 1, CommandFlow at field 11 with consumer_id 1 and messagePermits 2', () => {
    const bytes = encodeCommand('flow', { consumer_id: 3, messagePermits: 1000 })
    // 08 0b: type (field 1, varint) = 11; 5a 05: field 11, 5 bytes; 08 03: consumer_id 3; 10 e8 07: permits 1000
    expect(Buffer.from(bytes).toString('hex')).toBe('080b5a05080310e807')
  })

  it('skips fields it does not know and keeps absent optional fields undefined', () => {
    const writer = new BinaryWriter()
    writer.tag(1, WireType.LengthDelimited).string('producer-1')
    writer.tag(2, WireType.Varint).uint64(12)
    writer.tag(3, WireType.Varint).uint64(1_700_000_000_000)
    writer.tag(99, WireType.LengthDelimited).string('a field from a newer protocol')
    writer.tag(24, WireType.Varint).uint64(5)
    const metadata = decode<MessageMetadata>(MessageMetadata, writer.finish())
    expect(metadata).toEqual({ producer_name: 'producer-1', sequence_id: 12, publish_time: 1_700_000_000_000 })
    expect(metadata.num_messages_in_batch).toBeUndefined()
  })

  it('carries every field of the message metadata it reads or writes', () => {
    const full: MessageMetadata = {
      producer_name: 'p-1',
      sequence_id: 2 ** 40,
      publish_time: 1_700_000_000_000,
      properties: [
        { key: 'id', value: 'abc' },
        { key: 'empty', value: '' },
      ],
      replicated_from: 'other-cluster',
      partition_key: 'k',
      compression: CompressionType.ZSTD,
      uncompressed_size: 4_000_000_000,
      num_messages_in_batch: 3,
      event_time: 1_600_000_000_000,
      encryption_keys: [new Uint8Array([1, 2]), new Uint8Array([3])],
      schema_version: new Uint8Array([0, 0, 0, 7]),
      marker_type: 2,
      null_value: true,
      uuid: 'u-u-i-d',
      num_chunks_from_msg: 4,
      chunk_id: 1,
    }
    expect(decode<MessageMetadata>(MessageMetadata, encode(MessageMetadata, full))).toEqual(full)
    // A negative int32 and a false bool come back as they went.
    const negative = { producer_name: '', sequence_id: 0, publish_time: 0, marker_type: -1, null_value: false }
    expect(decode<MessageMetadata>(MessageMetadata, encode(MessageMetadata, negative))).toEqual(negative)
  })

  it('carries every field of a batched message’s metadata and of a message id', () => {
    const single: SingleMessageMetadata = {
      properties: [{ key: 'a', value: 'b' }],
      partition_key: 'pk',
      payload_size: 12,
      compacted_out: true,
      event_time: 2 ** 41,
      sequence_id: 2 ** 42,
      null_value: true,
    }
    expect(decode(SingleMessageMetadata, encode(SingleMessageMetadata, single))).toEqual(single)
    const id: MessageIdData = { ledgerId: 2n ** 64n - 1n, entryId: 0n, partition: -1, batch_index: 5, batch_size: 9 }
    expect(decode(MessageIdData, encode(MessageIdData, id))).toEqual(id)
  })

  it('writes the connect command’s feature flags and the authentication data of a response as PulsarApi.proto numbers them', () => {
    const flags = {
      supports_auth_refresh: true,
      supports_broker_entry_metadata: true,
      supports_partial_producer: true,
      supports_topic_watchers: true,
    }
    // 08 02: CONNECT; 12 0a: field 2, 10 bytes; 52 08: feature_flags (field 10), 8 bytes; 08 01 10 01 18 01 20 01: flags 1 to 4 true
    expect(Buffer.from(encodeCommand('connect', { feature_flags: flags })).toString('hex')).toBe(
      '0802120a52080801100118012001',
    )
    // 08 25: AUTH_RESPONSE (37); aa 02 0c: field 37, 12 bytes; 12 0a: response (field 2); 0a 05 "token": auth_method_name; 12 01 04: auth_data
    const answer = encodeCommand('auth_response', {
      response: { auth_method_name: 'token', auth_data: new Uint8Array([4]) },
    })
    expect(Buffer.from(answer).toString('hex')).toBe('0825aa020c120a0a05746f6b656e120104')
    const challenge = {
      server_version: 's',
      challenge: { auth_method_name: 'token', auth_data: new Uint8Array([1, 2, 3]) },
      protocol_version: 21,
    }
    expect(decodeCommand(encodeCommand('auth_challenge', challenge))).toEqual({
      type: 'auth_challenge',
      body: challenge,
    })
  })

  it('reads a BaseCommand whatever else it carries: a type sent as bytes, other varints and no body', () => {
    expect(decodeCommand(new Uint8Array(0))).toEqual({ type: 'unknown', typeNumber: -1 })
    const writer = new BinaryWriter()
    writer.tag(1, WireType.LengthDelimited).bytes(new Uint8Array([18])) // field 1 with the wrong wire type: skipped
    writer.tag(1, WireType.Varint).int32(18) // ping
    writer.tag(7, WireType.Varint).int32(1) // a varint in a command's place: skipped
    expect(decodeCommand(writer.finish())).toEqual({ type: 'ping', body: {} })
    const noBody = new BinaryWriter()
    noBody.tag(1, WireType.Varint).int32(13)
    expect(decodeCommand(noBody.finish())).toEqual({ type: 'success', body: {} })
  })

  it('reports an unknown command type as unknown rather than failing', () => {
    const writer = new BinaryWriter()
    writer.tag(1, WireType.Varint).int32(64) // WATCH_TOPIC_LIST
    writer.tag(64, WireType.LengthDelimited).bytes(new Uint8Array([8, 1]))
    expect(decodeCommand(writer.finish())).toEqual({ type: 'unknown', typeNumber: 64 })
  })
})

describe('frames', () => {
  const metadata = { producer_name: 'p', sequence_id: 1, publish_time: 42, properties: [{ key: 'id', value: 'abc' }] }

  it('lays out a simple frame as [total][command size][command]', () => {
    const command = encodeCommand('ping', {})
    const frame = simpleFrame(command)
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4)
    expect(frame.readUInt32BE(4)).toBe(command.length)
    expect(decodeCommand(parseFrame(frame.subarray(4)).command).type).toBe('ping')
  })

  it('lays out a payload frame with magic 0x0e01 and a CRC32C over metadata size, metadata and payload', () => {
    const command = encodeCommand('send', { producer_id: 1, sequence_id: 1, num_messages: 1 })
    const frame = payloadFrame(command, metadata, utf8('{"x":1}'))
    const at = 8 + command.length
    expect(frame.readUInt16BE(at)).toBe(0x0e01)
    expect(frame.readUInt32BE(at + 2)).toBe(crc32c(frame.subarray(at + 6)))
    const parsed = parseFrame(frame.subarray(4))
    expect(parsed.message?.checksumOk).toBe(true)
    expect(parsed.message?.metadata).toEqual(metadata)
    expect(text(parsed.message!.payload)).toBe('{"x":1}')
  })

  it('notices a payload changed on the way', () => {
    const frame = payloadFrame(encodeCommand('send', { producer_id: 1, sequence_id: 1 }), metadata, utf8('{"x":1}'))
    frame.writeUInt8(frame.readUInt8(frame.length - 2) ^ 0x01, frame.length - 2)
    expect(parseFrame(frame.subarray(4)).message?.checksumOk).toBe(false)
  })

  it('skips broker-entry metadata (magic 0x0e02) in front of the checksum', () => {
    const command = encodeCommand('message', { consumer_id: 1, message_id: { ledgerId: 1n, entryId: 2n } })
    const plain = payloadFrame(command, metadata, utf8('hello')).subarray(8 + command.length)
    const entryMetadata = Buffer.from([0x08, 0x2a]) // broker_timestamp = 42
    const extra = Buffer.alloc(6)
    extra.writeUInt16BE(0x0e02, 0)
    extra.writeUInt32BE(entryMetadata.length, 2)
    const body = Buffer.concat([Buffer.alloc(4), command, extra, entryMetadata, plain])
    body.writeUInt32BE(command.length, 0)
    const parsed = parseFrame(body)
    expect(parsed.message?.checksumOk).toBe(true)
    expect(text(parsed.message!.payload)).toBe('hello')
  })

  it('cuts a byte stream into frames however the socket splits it', () => {
    const frames = [
      simpleFrame(encodeCommand('ping', {})),
      payloadFrame(encodeCommand('send', { producer_id: 1, sequence_id: 1 }), metadata, new Uint8Array(3000).fill(7)),
      simpleFrame(encodeCommand('pong', {})),
    ]
    const stream = Buffer.concat(frames)
    for (const size of [1, 3, 4, 5, 100, stream.length]) {
      const got = feed(stream, size)
      expect(got.map((f) => decodeCommand(parseFrame(f).command).type)).toEqual(['ping', 'send', 'pong'])
      expect(parseFrame(got[1]!).message?.payload.length).toBe(3000)
    }
  })

  it('refuses a frame over the size limit before reading it', () => {
    const frame = payloadFrame(
      encodeCommand('send', { producer_id: 1, sequence_id: 1 }),
      metadata,
      new Uint8Array(2000),
    )
    expect(() => feed(frame, 8, new FrameDecoder(1000))).toThrow(/over the limit of 1000/)
  })

  it('refuses a frame whose command overruns it', () => {
    const frame = simpleFrame(encodeCommand('ping', {}))
    frame.writeUInt32BE(100, 4)
    expect(() => parseFrame(frame.subarray(4))).toThrow(PulsarError)
  })
})

describe('frames: what a peer may send', () => {
  const metadata = { producer_name: 'p', sequence_id: 7, publish_time: 42 }
  const command = encodeCommand('message', { consumer_id: 1, message_id: { ledgerId: 1n, entryId: 2n } })

  /** A payload frame (without its totalSize field) as a peer that leaves out the optional CRC32C writes it. */
  function withoutChecksum(payload: Uint8Array, options: { brokerEntry?: Uint8Array } = {}): Buffer {
    const meta = encode(MessageMetadata, metadata)
    const head = Buffer.alloc(4)
    head.writeUInt32BE(command.length, 0)
    const parts: Uint8Array[] = [head, command]
    if (options.brokerEntry) {
      const extra = Buffer.alloc(6)
      extra.writeUInt16BE(0x0e02, 0)
      extra.writeUInt32BE(options.brokerEntry.length, 2)
      parts.push(extra, options.brokerEntry)
    }
    const size = Buffer.alloc(4)
    size.writeUInt32BE(meta.length, 0)
    parts.push(size, meta, payload)
    return Buffer.concat(parts)
  }

  it('parses a payload frame without the optional CRC32C, as sound', () => {
    const parsed = parseFrame(withoutChecksum(utf8('hello')))
    expect(decodeCommand(parsed.command).type).toBe('message')
    expect(parsed.message).toStrictEqual({ metadata, payload: expect.anything(), checksumOk: true })
    expect(text(parsed.message!.payload)).toBe('hello')
  })

  it('parses one without CRC32C behind broker-entry metadata', () => {
    const parsed = parseFrame(withoutChecksum(utf8('after the entry'), { brokerEntry: Buffer.from([0x08, 0x2a]) }))
    expect(parsed.message?.checksumOk).toBe(true)
    expect(parsed.message?.metadata).toEqual(metadata)
    expect(text(parsed.message!.payload)).toBe('after the entry')
  })

  it('parses the smallest frame, an empty command, and hands on a frame of size 0 for parseFrame to refuse', () => {
    const smallest = parseFrame(Buffer.from([0, 0, 0, 0]))
    expect(smallest.command.length).toBe(0)
    expect(smallest.message).toBeUndefined()
    const empty = new FrameDecoder(1 << 20).push(Buffer.from([0, 0, 0, 0]))
    expect(empty.map((f) => f.length)).toEqual([0])
    expect(() => parseFrame(empty[0]!)).toThrow('frame of 0 bytes is too short')
  })

  it('parses an empty payload, and a simple frame whose command fills it exactly', () => {
    const parsed = parseFrame(withoutChecksum(new Uint8Array(0)))
    expect(parsed.message?.payload.length).toBe(0)
    const simple = parseFrame(simpleFrame(command).subarray(4))
    expect(simple.message).toBeUndefined()
    expect(Buffer.from(simple.command).equals(Buffer.from(command))).toBe(true)
  })

  it('refuses message metadata that overruns the frame, as a protocol error worth reconnecting for', () => {
    const frame = withoutChecksum(utf8('x'))
    const at = 4 + command.length
    frame.writeUInt32BE(frame.length - at - 4 + 1, at) // one byte more than is left
    const error = failure(() => parseFrame(frame))
    expect(error.code).toBe('ProtocolError')
    expect(error.retriable).toBe(true)
    expect(error.message).toBe(`message metadata of ${frame.length - at - 3} bytes overruns its frame`)
    // Exactly what is left is metadata and an empty payload.
    frame.writeUInt32BE(frame.length - at - 4, at)
    expect(() => parseFrame(frame)).not.toThrow(PulsarError)
  })

  it('refuses a frame too short to hold its command size, and a command that overruns it, both retriable', () => {
    const short = failure(() => parseFrame(Buffer.from([0, 0, 0])))
    expect(short).toMatchObject({ code: 'ProtocolError', retriable: true, message: 'frame of 3 bytes is too short' })
    const frame = simpleFrame(command).subarray(4)
    frame.writeUInt32BE(command.length + 1, 0)
    expect(failure(() => parseFrame(frame))).toMatchObject({
      code: 'ProtocolError',
      retriable: true,
      message: `command of ${command.length + 1} bytes overruns its ${frame.length}-byte frame`,
    })
  })

  it('takes a frame of exactly the size limit and refuses one byte more, retriable', () => {
    const frame = simpleFrame(command)
    const size = frame.length - 4
    expect(feed(frame, frame.length, new FrameDecoder(size))).toHaveLength(1)
    const error = failure(() => feed(frame, frame.length, new FrameDecoder(size - 1)))
    expect(error).toMatchObject({
      code: 'ProtocolError',
      retriable: true,
      message: `frame of ${size} bytes is over the limit of ${size - 1}`,
    })
  })

  it('keeps the bytes of the next frame that came with the end of this one', () => {
    const one = simpleFrame(encodeCommand('ping', {}))
    const two = simpleFrame(encodeCommand('pong', {}))
    const decoder = new FrameDecoder(1 << 20)
    const both = Buffer.concat([one, two])
    // The first push ends inside the second frame's size field.
    expect(
      decoder.push(both.subarray(0, one.length + 2)).map((f) => decodeCommand(parseFrame(f).command).type),
    ).toEqual(['ping'])
    expect(decoder.push(both.subarray(one.length + 2)).map((f) => decodeCommand(parseFrame(f).command).type)).toEqual([
      'pong',
    ])
    expect(decoder.push(Buffer.alloc(0))).toEqual([])
  })
})

describe('batches', () => {
  it('unpacks what a batching producer packs, with per-message properties', () => {
    const packed = packBatch([
      { metadata: { properties: [{ key: 'id', value: '1' }] }, payload: utf8('one') },
      { metadata: { properties: [{ key: 'id', value: '2' }], partition_key: 'k' }, payload: utf8('') },
      { metadata: { event_time: 5 }, payload: utf8('three') },
    ])
    const entries = unpackBatch(packed, 3)
    expect(entries.map((e) => text(e.payload))).toEqual(['one', '', 'three'])
    expect(entries[0]!.metadata.properties).toEqual([{ key: 'id', value: '1' }])
    expect(entries[1]!.metadata.partition_key).toBe('k')
    expect(entries[2]!.metadata.event_time).toBe(5)
  })

  it('refuses a batch that holds fewer messages than its metadata says, or overruns itself', () => {
    const packed = packBatch([{ metadata: {}, payload: utf8('only') }])
    expect(() => unpackBatch(packed, 2)).toThrow(/message 1 of 2 is missing/)
    expect(() => unpackBatch(packed.subarray(0, packed.length - 1), 1)).toThrow(/overruns/)
  })
})

describe('batches: what a producer may get wrong', () => {
  const packed = packBatch([
    { metadata: {}, payload: utf8('one') },
    { metadata: {}, payload: utf8('two') },
  ])

  it('refuses metadata that overruns the batch, as a final protocol error: the same entry fails the same way every time', () => {
    const first = Buffer.from(packed).readUInt32BE(0)
    const cut = packed.subarray(0, 4 + first - 1)
    expect(failure(() => unpackBatch(cut, 1))).toMatchObject({
      code: 'ProtocolError',
      retriable: false,
      message: 'malformed batch: the metadata of message 0 overruns the batch',
    })
    expect(failure(() => unpackBatch(packed.subarray(0, 3), 1))).toMatchObject({
      retriable: false,
      message: 'malformed batch: message 0 of 1 is missing',
    })
  })

  it('reads a batch that ends exactly with its last message, and one whose last message is empty', () => {
    expect(unpackBatch(packed, 2).map((e) => text(e.payload))).toEqual(['one', 'two'])
    const withEmpty = packBatch([
      { metadata: {}, payload: utf8('x') },
      { metadata: {}, payload: new Uint8Array(0) },
    ])
    expect(unpackBatch(withEmpty, 2).map((e) => text(e.payload))).toEqual(['x', ''])
    // A metadata of zero bytes (payload_size absent) at the very end is a message with no payload.
    expect(unpackBatch(new Uint8Array([0, 0, 0, 0]), 1).map((e) => e.payload.length)).toEqual([0])
  })
})

describe('compression', () => {
  const original = utf8(
    JSON.stringify({ response: 'All work and no play makes Jack a dull boy. '.repeat(40), end_of_stream: true }),
  )

  const codecs: { name: string; type: number; compress: (data: Uint8Array) => Uint8Array }[] = [
    {
      name: 'LZ4 (raw block)',
      type: CompressionType.LZ4,
      compress: (data) => {
        const out = new Uint8Array(compressBound(data.length))
        return out.subarray(0, compressBlock(data, out, 0, data.length, new Uint32Array(1 << 16)))
      },
    },
    { name: 'ZLIB', type: CompressionType.ZLIB, compress: (data) => deflateSync(data) },
    { name: 'ZSTD', type: CompressionType.ZSTD, compress: (data) => zstdCompressSync(data) },
    { name: 'SNAPPY (raw)', type: CompressionType.SNAPPY, compress: (data) => snappyCompress(data) },
  ]

  it.each(codecs)('restores a $name payload byte for byte', ({ type, compress }) => {
    const compressed = compress(original)
    expect(compressed.length).toBeLessThan(original.length)
    expect(Buffer.compare(Buffer.from(decompress(type, compressed, original.length)), Buffer.from(original))).toBe(0)
  })

  it.each(codecs)(
    'refuses a $name payload whose size differs from the metadata, as a final protocol error',
    ({ type, compress }) => {
      const error = thrownBy(() => decompress(type, compress(original), original.length + 1))
      expect(error).toBeInstanceOf(PulsarError)
      expect(error).toMatchObject({ code: 'ProtocolError', retriable: false })
    },
  )

  it.each(codecs.filter((c) => c.type !== CompressionType.LZ4))(
    'refuses corrupt $name data with a ProtocolError',
    ({ type }) => {
      const error = thrownBy(() => decompress(type, utf8('this is not compressed data at all'), 100))
      expect(error).toBeInstanceOf(PulsarError)
      expect((error as PulsarError).code).toBe('ProtocolError')
    },
  )

  it.each(codecs)(
    'refuses a $name payload that inflates past its declared size, as a final protocol error',
    ({ type, compress }) => {
      const error = thrownBy(() => decompress(type, compress(original), original.length - 1))
      expect(error).toBeInstanceOf(PulsarError)
      expect(error).toMatchObject({ code: 'ProtocolError', retriable: false })
    },
  )

  it('stops inflating a ZLIB or LZ4 bomb at the declared size', () => {
    // 2 MiB of zeros in a few kilobytes: refused, never held whole.
    const bomb = new Uint8Array(2 << 20)
    const lz4 = (() => {
      const out = new Uint8Array(compressBound(bomb.length))
      return out.subarray(0, compressBlock(bomb, out, 0, bomb.length, new Uint32Array(1 << 16)))
    })()
    for (const [type, data] of [
      [CompressionType.ZLIB, deflateSync(bomb)],
      [CompressionType.LZ4, lz4],
    ] as const) {
      expect(data.length).toBeLessThan(64 << 10)
      expect(() => decompress(type, data, 1000)).toThrow(PulsarError)
    }
    expect(() => decompress(CompressionType.ZLIB, deflateSync(bomb), 1000)).toThrow(
      'cannot decompress a ZLIB payload: it inflates past the 1000 bytes its metadata says',
    )
  })

  // 256 MiB of one byte in a few kilobytes, in the two forms that let a codec write most per input byte.
  const BOMB_SIZE = 256 << 20
  /** A ZSTD frame of RLE blocks (128 KiB each from 4 bytes) with no content size in its header. */
  const zstdBomb = (size: number) => {
    const blocks = size / (128 << 10)
    const frame = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3] // magic, no content size, a 128 KiB window
    for (let i = 0; i < blocks; i++) {
      const header = ((128 << 10) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0) // size, RLE, last
      frame.push(header & 0xff, (header >> 8) & 0xff, header >> 16, 0x61)
    }
    return Uint8Array.from(frame)
  }
  /** A raw Snappy stream declaring `declared` bytes: one literal "a", then copies of 64 bytes (3 bytes each). */
  const snappyStream = (declared: number, written: number) => {
    const header: number[] = []
    for (let n = declared; ; n = Math.floor(n / 128)) {
      if (n < 128) {
        header.push(n)
        break
      }
      header.push((n % 128) | 0x80)
    }
    const copies = Array.from({ length: Math.floor((written - 1) / 64) }, () => [(63 << 2) | 2, 1, 0]).flat()
    return Uint8Array.from([...header, 0x00, 0x61, ...copies])
  }

  it('round-trips the ZSTD and Snappy bomb builders at a size that fits, so the refusals below are of size alone', () => {
    expect(text(decompress(CompressionType.ZSTD, zstdBomb(256 << 10), 256 << 10))).toBe('a'.repeat(256 << 10))
    expect(text(decompress(CompressionType.SNAPPY, snappyStream(641, 641), 641))).toBe('a'.repeat(641))
  })

  it('stops inflating a ZSTD bomb at the declared size, whatever the frame says or leaves out', () => {
    const bomb = zstdBomb(BOMB_SIZE)
    expect(bomb.length).toBeLessThan(16 << 10)
    expect(() => decompress(CompressionType.ZSTD, bomb, 1000)).toThrow(
      'cannot decompress a ZSTD payload: it inflates past the 1000 bytes its metadata says',
    )
    // The frame declaring its true size changes nothing.
    const declared = zstdCompressSync(new Uint8Array(2 << 20))
    expect(() => decompress(CompressionType.ZSTD, declared, 1000)).toThrow(
      expect.objectContaining({
        code: 'ProtocolError',
        retriable: false,
        message: 'cannot decompress a ZSTD payload: it inflates past the 1000 bytes its metadata says',
      }),
    )
  })

  it('refuses a Snappy stream that writes or declares more than the metadata, before allocating it', () => {
    const refusal = 'cannot decompress a SNAPPY payload: it inflates past the 1000 bytes its metadata says'
    // Its header agrees with the metadata, its elements write 16 MiB (snappyjs would drop the rest silently).
    const overrun = snappyStream(1000, 16 << 20)
    expect(overrun.length).toBeLessThan(1 << 20)
    expect(() => decompress(CompressionType.SNAPPY, overrun, 1000)).toThrow(refusal)
    expect(() => decompress(CompressionType.SNAPPY, snappyStream(1000, 1001 + 64), 1000)).toThrow(refusal)
    // Its header declares 256 MiB (snappyjs would allocate that much first).
    expect(() => decompress(CompressionType.SNAPPY, snappyStream(BOMB_SIZE, 1000), 1000)).toThrow(refusal)
    expect(() => decompress(CompressionType.SNAPPY, snappyStream(1001, 1000), 1000)).toThrow(refusal)
  })

  it('restores a Snappy stream with every kind of element: literals of each length form, copies of each offset size', () => {
    const bytes = (n: number, from: number) => Array.from({ length: n }, (_, i) => 97 + ((from + i * 7) % 26))
    const le = (n: number, size: number) => Array.from({ length: size }, (_, i) => Math.floor(n / 256 ** i) % 256)
    const out: number[] = []
    const body: number[] = []
    const literal = (n: number) => {
      const data = bytes(n, out.length)
      const size = n <= 60 ? 0 : n <= 256 ? 1 : n <= 65536 ? 2 : 3
      body.push(size === 0 ? (n - 1) << 2 : (59 + size) << 2, ...le(n - 1, size), ...data)
      out.push(...data)
    }
    const copy = (length: number, offset: number, offsetSize: 1 | 2 | 4) => {
      if (offsetSize === 1) body.push(((offset >> 8) << 5) | ((length - 4) << 2) | 1, offset & 0xff)
      else body.push(((length - 1) << 2) | (offsetSize === 2 ? 2 : 3), ...le(offset, offsetSize))
      for (let i = 0; i < length; i++) out.push(out[out.length - offset]!)
    }
    literal(1)
    literal(60)
    copy(11, 1, 1)
    literal(61)
    literal(300)
    copy(64, 300, 2)
    literal(70_000)
    copy(4, 2047, 1)
    copy(64, 70_000, 4)
    copy(1, 3, 2)
    const varint = [out.length & 0x7f, (out.length >> 7) & 0x7f, out.length >> 14]
    const stream = Uint8Array.from([varint[0]! | 0x80, varint[1]! | 0x80, varint[2]!, ...body])
    expect(out.length).toBeGreaterThanOrEqual(1 << 14)
    expect(Buffer.from(decompress(CompressionType.SNAPPY, stream, out.length)).equals(Buffer.from(out))).toBe(true)
  })

  it('refuses a Snappy stream that goes on writing once it has written what it declares', () => {
    expect(() => decompress(CompressionType.SNAPPY, snappyStream(65, 65 + 64), 65)).toThrow(
      'cannot decompress a SNAPPY payload: it inflates past the 65 bytes its metadata says',
    )
  })

  it('refuses a Snappy stream whose length is cut short, and a ZSTD one that is not ZSTD, for what they are', () => {
    expect(() => decompress(CompressionType.SNAPPY, Uint8Array.of(0x80), 1)).toThrow(
      'cannot decompress a SNAPPY payload: ',
    )
    const error = (() => {
      try {
        decompress(CompressionType.ZSTD, utf8('not a zstd frame at all'), 1000)
      } catch (err) {
        return err as Error
      }
    })()
    expect(error?.message).toMatch(/^cannot decompress a ZSTD payload: /)
    expect(error?.message).not.toMatch(/inflates past/)
  })

  it('refuses a Snappy stream whose elements write less than its header says, rather than pad it with zeros', () => {
    expect(() => decompress(CompressionType.SNAPPY, snappyStream(1000, 641), 1000)).toThrow(
      'cannot decompress a SNAPPY payload: its elements write 641 bytes, its header says 1000',
    )
  })

  it.each(codecs)('restores an empty $name payload', ({ type, compress }) => {
    expect(decompress(type, compress(new Uint8Array(0)), 0)).toHaveLength(0)
  })

  it('refuses a payload that decompresses short of its declared size, naming both sizes', () => {
    expect(() => decompress(CompressionType.ZSTD, zstdCompressSync(original), original.length + 5)).toThrow(
      `a ZSTD payload decompressed to ${original.length} bytes, its metadata says ${original.length + 5}`,
    )
  })

  it('names every codec in its messages', () => {
    expect(() => decompress(CompressionType.LZ4, utf8('not lz4 at all, not at all'), 3)).toThrow(/LZ4 payload/)
    const lz4 = new Uint8Array(compressBound(original.length))
    const block = lz4.subarray(0, compressBlock(original, lz4, 0, original.length, new Uint32Array(1 << 16)))
    expect(() => decompress(CompressionType.LZ4, block, original.length - 1)).toThrow(
      `cannot decompress a LZ4 payload: the block holds ${original.length} bytes`,
    )
    expect(() => decompress(CompressionType.SNAPPY, snappyCompress(original), 1)).toThrow(/SNAPPY payload/)
    expect(() => decompress(CompressionType.ZLIB, utf8('garbage'), 1)).toThrow(/^cannot decompress a ZLIB payload: /)
    expect(() => decompress(9, original, 1)).toThrow(expect.objectContaining({ code: 'Unsupported', retriable: false }))
  })

  it('passes an uncompressed payload through and refuses an unknown codec', () => {
    expect(decompress(CompressionType.NONE, original, 0)).toBe(original)
    expect(() => decompress(9, original, original.length)).toThrow(/unknown compression type 9/)
  })

  it('unpacks a compressed batch: decompress first, then split', () => {
    const packed = packBatch([
      { metadata: {}, payload: utf8('first') },
      { metadata: {}, payload: utf8('second') },
    ])
    const entries = unpackBatch(decompress(CompressionType.ZSTD, zstdCompressSync(packed), packed.length), 2)
    expect(entries.map((e) => text(e.payload))).toEqual(['first', 'second'])
  })
})

describe('errors', () => {
  it("names the broker's error code and says whether trying again can help", () => {
    const busy = new PulsarServerError(6, 'namespace bundle is being unloaded')
    expect(busy.code).toBe('ServiceNotReady')
    expect(busy.retriable).toBe(true)
    expect(busy.message).toBe('ServiceNotReady: namespace bundle is being unloaded')
    const denied = new PulsarServerError(3, 'bad token')
    expect(denied.code).toBe('AuthenticationError')
    expect(denied.retriable).toBe(false)
    expect(new PulsarServerError(200, 'from the future').code).toBe('ServerError200')
  })

  it('encodes message metadata with every property', () => {
    const bytes = encode(MessageMetadata, {
      producer_name: 'p',
      sequence_id: 0,
      publish_time: 1,
      properties: [
        { key: 'a', value: '1' },
        { key: 'b', value: '' },
      ],
    })
    expect(decode<MessageMetadata>(MessageMetadata, bytes).properties).toEqual([
      { key: 'a', value: '1' },
      { key: 'b', value: '' },
    ])
  })
})
