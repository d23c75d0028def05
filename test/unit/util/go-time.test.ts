import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseGoTime, parseTimeText, timeInComment } from '../../../src/util/go-time.js'
import { ROOT } from '../../helpers/cli.js'
import { chainDumpBlock } from '../../../src/tokens/token-service.js'
import type { BlockRecord } from '../../../src/storage/token-records.js'

interface TimeVector { name: string, expected: { string: string, offset_seconds: number, unix_nano: string, wall_part?: string, monotonic_part?: string } }
const vectors = (JSON.parse(readFileSync(join(ROOT, 'test/fixtures/go-vectors.json'), 'utf8')) as { time_text: TimeVector[] }).time_text

describe('util: the reference\'s time text (Go time.Time.String)', () => {
  for (const v of vectors) {
    it(`${v.name}: ${v.expected.string}`, () => {
      const t = parseGoTime(v.expected.string)
      expect(t, v.expected.string).to.not.equal(undefined)
      expect(t!.unixNano.toString()).to.equal(v.expected.unix_nano)
      expect(t!.offsetSeconds).to.equal(v.expected.offset_seconds)
      expect(t!.unixMs).to.equal(Number(BigInt(v.expected.unix_nano) / 1_000_000n))
      if (v.expected.monotonic_part !== undefined) {
        expect(t!.monotonic).to.equal(v.expected.monotonic_part)
        // the wall part alone is the same instant
        expect(parseGoTime(v.expected.wall_part!)!.unixNano).to.equal(t!.unixNano)
      }
      expect(parseTimeText(v.expected.string)).to.equal(t!.unixMs)
    })
  }

  it('reads zone names, numeric zones and the monotonic reading; refuses what Go never writes', () => {
    expect(parseGoTime('2025-01-22 11:44:48.452452437 +0530 IST m=+0.012300000')).to.deep.include({ zone: 'IST', offsetSeconds: 19800, monotonic: 'm=+0.012300000' })
    expect(parseGoTime('2025-01-22 11:44:48 -0330 -0330')!.offsetSeconds).to.equal(-12600)
    expect(parseGoTime('2025-01-22 11:44:48 -0330 -03'), 'the zone must repeat the offset').to.equal(undefined)
    expect(parseGoTime('2025-01-22 11:44:48 +0400 +04')!.offsetSeconds).to.equal(14400)
    expect(parseGoTime('2025-01-22 11:44:48 m=-1.000000000 +0000 UTC')).to.equal(undefined)
    for (const bad of ['', '2025-01-22 11:44:48', '2025-01-22 11:44:48 +0000', '2025-02-30 11:44:48 +0000 UTC', '2025-02-29 00:00:00 +0000 UTC',
      '2025-01-22 24:00:00 +0000 UTC', '2025-01-22 11:44:48.1234567891 +0000 UTC', '2025-01-22 11:44:48 +0000 UTC m=+0.1', '2025-01-22  11:44:48 +0000 UTC',
      '2025-01-22 11:44:48 +0000 UTC ', `2025-01-22 11:44:48 +0000 ${'U'.repeat(80)}`]) {
      expect(parseGoTime(bad), JSON.stringify(bad)).to.equal(undefined)
    }
    expect(parseGoTime('2024-02-29 00:00:00 +0000 UTC')!.unixMs).to.equal(Date.UTC(2024, 1, 29))
  })

  it('parseTimeText takes ISO-8601 with a zone too (what this node writes), nothing looser', () => {
    const iso = '2026-11-26T12:24:40.469Z'
    expect(parseTimeText(iso)).to.equal(Date.parse(iso))
    expect(parseTimeText('2026-11-26T12:24:40+05:30')).to.equal(Date.parse('2026-11-26T12:24:40+05:30'))
    for (const bad of ['Nov 26 2026', '2026-11-26', '1764000000', '2026-11-26T12:24:40']) expect(parseTimeText(bad), bad).to.equal(undefined)
  })

  it('finds the time a reference block comment names', () => {
    expect(timeInComment('Test token generated at : 2025-01-22 11:44:48.45 +0530 IST m=+0.012345678')).to.equal(Date.UTC(2025, 0, 22, 6, 14, 48, 450))
    expect(timeInComment('FT generated at : 2025-01-22 06:14:48 +0000 UTC for FT Name : gold')).to.equal(Date.UTC(2025, 0, 22, 6, 14, 48))
    expect(timeInComment('Token burnt for parts at : 2025-07-04 09:05:07.000001 -0400 EDT')).to.equal(Date.UTC(2025, 6, 4, 13, 5, 7))
    expect(timeInComment('rent')).to.equal(undefined)
    expect(timeInComment(undefined)).to.equal(undefined)
  })

  it('a chain dump dates a block without an epoch by the Go time its comment names, else by when it was stored', () => {
    const rec = (over: Partial<BlockRecord>): BlockRecord => ({ number: 0, blockId: '0-h', hash: 'h', transactionType: '05', owner: 'o', signers: [], storedAt: Date.UTC(2026, 0, 1), ...over }) as unknown as BlockRecord
    const env = new Uint8Array([0xa0])
    // not Go's text (the monotonic reading has 9 digits): the stored time
    expect(chainDumpBlock(rec({ comment: 'Test token generated at : 2025-01-22 11:44:48.452452437 +0530 IST m=+0.5' }), env).time).to.equal('2026-01-01T00:00:00.000Z')
    expect(chainDumpBlock(rec({ comment: 'Test token generated at : 2025-01-22 11:44:48.452452437 +0530 IST m=+0.500000000' }), env).time).to.equal('2025-01-22T06:14:48.452Z')
    expect(chainDumpBlock(rec({ comment: 'rent' }), env).time).to.equal('2026-01-01T00:00:00.000Z')
    expect(chainDumpBlock(rec({ comment: 'Test token generated at : 2025-01-22 11:44:48 +0530 IST', epoch: 1_800_000_000 }), env).time).to.equal(new Date(1_800_000_000_000).toISOString())
  })
})
