/**
 * PNG in and out for the DID image scheme. Reading yields the "pixel stream" the reference
 * uses: rows top to bottom, pixels left to right, R G B per pixel with alpha dropped after
 * Go's premultiplication (`RGBA() >> 8`). Writing produces 8-bit truecolour RGB (colour type 2).
 */
import { createRequire } from 'node:module'
import type { PNG as PngClass } from 'pngjs'
import { RbtError, ErrorCode } from '../util/errors.js'

// pngjs (24 modules) is loaded at the first image read or write, not when the node starts
let pngModule: typeof PngClass | undefined
function PNGjs (): typeof PngClass {
  if (pngModule === undefined) pngModule = (createRequire(import.meta.url)('pngjs') as { PNG: typeof PngClass }).PNG
  return pngModule
}

export const DID_IMAGE_SIZE = 256
export const SHARE_WIDTH = 1024
export const SHARE_HEIGHT = 512
/** 256·256·3 */
export const DID_STREAM_LEN = DID_IMAGE_SIZE * DID_IMAGE_SIZE * 3
/** 1024·512·3 = 8 × DID_STREAM_LEN */
export const SHARE_STREAM_LEN = SHARE_WIDTH * SHARE_HEIGHT * 3

const PNG_SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)

export interface PngHeader { width: number, height: number }

/** Check the signature and read the IHDR size without decoding pixel data. */
export function pngHeader (bytes: Uint8Array, what = 'image'): PngHeader {
  if (!(bytes instanceof Uint8Array) || bytes.length < 33 || !PNG_SIGNATURE.every((v, i) => bytes[i] === v)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${what} is not a PNG file`)
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (Buffer.from(bytes.subarray(12, 16)).toString('latin1') !== 'IHDR') {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${what} is not a valid PNG (no IHDR chunk)`)
  }
  return { width: dv.getUint32(16), height: dv.getUint32(20) }
}

/**
 * Decode a PNG of exactly `width`×`height` into its RGB pixel stream.
 * Rejects other formats and sizes with INVALID_INPUT.
 */
export function readPngRgb (bytes: Uint8Array, width: number, height: number, what = 'image'): Uint8Array {
  const h = pngHeader(bytes, what)
  if (h.width !== width || h.height !== height) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${what} must be ${width}x${height} pixels, got ${h.width}x${h.height}`)
  }
  let png: PngClass
  try {
    png = PNGjs().sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${what} could not be decoded as PNG: ${(e as Error).message}`, { cause: e })
  }
  const src = png.data
  const n = width * height
  const out = new Uint8Array(n * 3)
  for (let i = 0, o = 0, s = 0; i < n; i++, o += 3, s += 4) {
    const a = src[s + 3]!
    if (a === 255) {
      out[o] = src[s]!; out[o + 1] = src[s + 1]!; out[o + 2] = src[s + 2]!
    } else {
      // Go: c16 = c8·0x101·a8 / 0xff (premultiplied 16-bit), then the high byte.
      out[o] = Math.floor(src[s]! * 0x101 * a / 0xff) >>> 8
      out[o + 1] = Math.floor(src[s + 1]! * 0x101 * a / 0xff) >>> 8
      out[o + 2] = Math.floor(src[s + 2]! * 0x101 * a / 0xff) >>> 8
    }
  }
  return out
}

/** Read a 256×256 DID image (input image.png or did.png). */
export function readDidImage (bytes: Uint8Array, what = 'image'): Uint8Array {
  return readPngRgb(bytes, DID_IMAGE_SIZE, DID_IMAGE_SIZE, what)
}

/** Read a 1024×512 share image (pvtShare.png / pubShare.png). */
export function readShareImage (bytes: Uint8Array, what = 'share image'): Uint8Array {
  return readPngRgb(bytes, SHARE_WIDTH, SHARE_HEIGHT, what)
}

/**
 * Encode an RGB pixel stream as an 8-bit RGB PNG. The content is random-looking, so the
 * encoder skips filter search and uses fast deflate: smaller effort, same pixels.
 */
export function writePngRgb (rgb: Uint8Array, width: number, height: number): Uint8Array {
  if (rgb.length !== width * height * 3) throw new RbtError(ErrorCode.INVALID_INPUT, 'pixel buffer size does not match the image size')
  const png = new (PNGjs())({ width, height, colorType: 2, inputColorType: 2, inputHasAlpha: false, bitDepth: 8 })
  png.data = Buffer.from(rgb.buffer, rgb.byteOffset, rgb.byteLength)
  const out = PNGjs().sync.write(png, { colorType: 2, inputColorType: 2, inputHasAlpha: false, deflateLevel: 1, filterType: 0 })
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength)
}
