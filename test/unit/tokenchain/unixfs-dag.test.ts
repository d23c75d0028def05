import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { cidV0ForContent } from '../../../src/tokenchain/cid.js'
import {
  CHUNK_SIZE, UnixFsFileBuilder, blockMatchesCid, decodeInnerNode, hasLinks, leafBlock, leafData
} from '../../../src/tokenchain/unixfs-dag.js'

/**
 * Deterministic content: the AES-128-CTR keystream (key = first 16 bytes of sha256(seed), IV 0)
 * over zeros, so the expected CIDs below can be regenerated from the seed alone.
 */
function content (seed: string, n: number): Buffer {
  const key = createHash('sha256').update(seed).digest().subarray(0, 16)
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n))
}

/**
 * Expected CIDs written down from an independent implementation: the JavaScript IPFS importer
 * `ipfs-unixfs-importer` 15.4.0 (with `blockstore-core`), run outside this project with the
 * options that match a default `ipfs add`: cidVersion 0, rawLeaves false, leafType 'file',
 * reduceSingleLeafToSelf true, chunker fixedSize({ chunkSize: 262144 }), layout
 * balanced({ maxChildrenPerNode: 174 }), no wrapping directory; content `content('rbtnode unixfs ' + n, n)`.
 * The 0-byte CID is also the well-known id of an empty `ipfs add`.
 */
const EXPECTED: Array<[string, number, string]> = [
  ['0 B', 0, 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH'],
  ['1 B', 1, 'Qmf3KqWZc7qF1nmNgBPErPoaGZ5KW1jU9PkXmfJXMNXgxA'],
  ['exactly one chunk', CHUNK_SIZE, 'QmQSVNF8vKnojK2HaZwRKXMJKScd4MwHxjKK7jbTuSMquL'],
  ['one chunk and one byte', CHUNK_SIZE + 1, 'QmZsQHGR9EkSXqe9EiDYd8epscXPoPFBDec4a4ZDKD8g73'],
  ['174 chunks', 174 * CHUNK_SIZE, 'QmWvkYQrHMpeMZ2hfXDKsWzp224K68Pn7yACueB6UkBGVt'],
  ['175 chunks', 175 * CHUNK_SIZE, 'QmPYAzWtopYNhwcj91TVTxdFQZMLQ2cK9tmYbpRHge8nn4'],
  ['100 MiB', 100 * 1024 * 1024, 'QmNUrEixEP7oUzFn3xkd48mawEYuouCeHmrWDVeQFguKRZ']
]

/** The file's DAG built chunk by chunk, the chunks cut at odd places first (as a stream gives them). */
function streamed (bytes: Buffer): { cid: string, size: number, inner: Uint8Array[] } {
  const b = new UnixFsFileBuilder()
  for (let off = 0; off < bytes.length; off += CHUNK_SIZE) b.addChunk(bytes.subarray(off, off + CHUNK_SIZE))
  return b.finish()
}

describe('tokenchain/unixfs-dag: the same id as a default ipfs add, built chunk by chunk', function () {
  this.timeout(60_000)
  for (const [name, n, cid] of EXPECTED) {
    it(`${name} (${n} bytes) → ${cid}`, () => {
      const bytes = content('rbtnode unixfs ' + String(n), n)
      const built = streamed(bytes)
      expect(built.cid).to.equal(cid)
      expect(built.size).to.equal(n)
      // the whole-content function gives the same id
      if (n <= 175 * CHUNK_SIZE) expect(cidV0ForContent(bytes)).to.equal(cid)
    })
  }

  it('the inner nodes link the leaves in file order; every leaf block round-trips and matches its CID', () => {
    const bytes = content('rbtnode unixfs ' + String(175 * CHUNK_SIZE), 175 * CHUNK_SIZE)
    const built = streamed(bytes)
    // 175 leaves: two parents (174 + 1) and the root
    expect(built.inner).to.have.length(3)
    const root = built.inner[2]
    expect(blockMatchesCid(built.cid, root)).to.equal(true)
    expect(hasLinks(root)).to.equal(true)
    const top = decodeInnerNode(root)
    expect(top.links.map((l) => l.size)).to.deep.equal([174 * CHUNK_SIZE, CHUNK_SIZE])
    const first = decodeInnerNode(built.inner[0])
    expect(blockMatchesCid(top.links[0].cid, built.inner[0])).to.equal(true)
    expect(first.links).to.have.length(174)
    const leaf = leafBlock(bytes.subarray(CHUNK_SIZE, 2 * CHUNK_SIZE))
    expect(blockMatchesCid(first.links[1].cid, leaf)).to.equal(true)
    expect(Buffer.from(leafData(leaf)!).equals(bytes.subarray(CHUNK_SIZE, 2 * CHUNK_SIZE))).to.equal(true)
    // one flipped byte and the block no longer matches
    leaf[100] ^= 1
    expect(blockMatchesCid(first.links[1].cid, leaf)).to.equal(false)
    expect(() => decodeInnerNode(leafBlock(Buffer.from('x')))).to.throw(/inner node/)
    expect(leafData(root)).to.equal(undefined)
  })
})

describe('tokenchain/unixfs-dag: leaf data read in place', () => {
  it('gives the bytes of a leaf of every length class, the same as decoding the node', () => {
    for (const n of [0, 1, 2, 127, 128, 129, 16375, 16376, 16383, 16384, 16385, 200_000, CHUNK_SIZE - 1, CHUNK_SIZE]) {
      const data = content('leaf ' + String(n), n)
      const got = leafData(leafBlock(data))
      expect(got, String(n)).to.not.equal(undefined)
      expect(Buffer.from(got!).equals(data), String(n)).to.equal(true)
    }
  })
})
