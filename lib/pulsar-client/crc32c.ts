/**
 * CRC32C (Castagnoli), the checksum Pulsar puts on every message frame: it
 * covers the metadata size, the metadata and the payload. Slicing-by-8, so a
 * multi-megabyte payload costs milliseconds rather than tens of them.
 */
const POLY = 0x82f63b78 // reflected Castagnoli polynomial

const TABLES = (() => {
  const tables = Array.from({ length: 8 }, () => new Uint32Array(256))
  const t0 = tables[0]!
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1
    t0[n] = c >>> 0
  }
  for (let n = 0; n < 256; n++) {
    let c = t0[n]!
    for (let k = 1; k < 8; k++) {
      c = t0[c & 0xff]! ^ (c >>> 8)
      tables[k]![n] = c >>> 0
    }
  }
  return tables as [
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
    Uint32Array,
  ]
})()

/** Continues `crc` (0 to start) over `data`; returns the unsigned 32-bit checksum. */
export function crc32c(data: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES
  let c = ~crc >>> 0
  let i = 0
  const end8 = data.length - (data.length % 8)
  while (i < end8) {
    const lo = (c ^ (data[i]! | (data[i + 1]! << 8) | (data[i + 2]! << 16) | (data[i + 3]! << 24))) >>> 0
    c =
      t7[lo & 0xff]! ^
      t6[(lo >>> 8) & 0xff]! ^
      t5[(lo >>> 16) & 0xff]! ^
      t4[lo >>> 24]! ^
      t3[data[i + 4]!]! ^
      t2[data[i + 5]!]! ^
      t1[data[i + 6]!]! ^
      t0[data[i + 7]!]!
    i += 8
  }
  while (i < data.length) c = t0[(c ^ data[i++]!) & 0xff]! ^ (c >>> 8)
  return ~c >>> 0
}
