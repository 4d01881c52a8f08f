/** Types for the two pure-JavaScript codecs that ship without their own. */
declare module 'lz4js' {
  /** Decompresses an LZ4 block into `dst` from `dIndex`; returns the end index in `dst`. */
  export function decompressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    dIndex: number,
  ): number
  export function compressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    sIndex: number,
    sLength: number,
    hashTable: Uint32Array,
  ): number
  export function compressBound(n: number): number
}

declare module 'snappyjs' {
  export function uncompress(data: Uint8Array, maxLength?: number): Uint8Array
  export function compress(data: Uint8Array): Uint8Array
}
