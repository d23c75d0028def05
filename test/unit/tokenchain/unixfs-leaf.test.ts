import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { CHUNK_SIZE, frameOf, leafDigest, leafFrame } from '../../../src/tokenchain/unixfs-leaf.js'
import { leafBlock, leafData } from '../../../src/tokenchain/unixfs-dag.js'

describe('tokenchain/unixfs-leaf: a leaf\'s frame and digest without the DAG libraries', () => {
  for (const n of [0, 1, 127, 128, 16_383, 16_384, CHUNK_SIZE - 1, CHUNK_SIZE]) {
    it(`${n} bytes: the digest is the sha2-256 of the leaf node, which reads back to the chunk`, () => {
      const chunk = randomBytes(n)
      const block = leafBlock(chunk)
      expect(leafDigest(chunk).equals(createHash('sha256').update(block).digest())).to.equal(true)
      expect(Buffer.from(leafData(block)!).equals(chunk)).to.equal(true)
      const f = frameOf(n)
      expect(f.prefix.length + n + f.suffix.length).to.equal(block.length)
      expect(leafFrame(n).prefix.equals(f.prefix)).to.equal(true)
    })
  }
})
