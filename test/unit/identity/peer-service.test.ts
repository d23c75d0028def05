import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodeAnnouncement } from '../../../src/node/identity/announcement.js'
import { PEER_SERVICE_LOG_SIZE, PeerServiceLog, encodePeerMap, publishableOnPeerService } from '../../../src/node/identity/peer-service.js'
import { ROOT } from '../../helpers/cli.js'

interface AnnouncementVector { name: string, expected: { published_json: string } }
const vectors = (JSON.parse(readFileSync(join(ROOT, 'test/fixtures/go-vectors.json'), 'utf8')) as { announcements: AnnouncementVector[] }).announcements

describe('identity/peer-service: the reference\'s PeerMap on peer_service', () => {
  it('writes a PeerMap byte for byte as the reference\'s encoding/json did', () => {
    expect(vectors.length).to.be.greaterThan(0)
    for (const v of vectors) {
      const json = v.expected.published_json
      const a = decodeAnnouncement(new TextEncoder().encode(json), Date.parse('2026-11-27T00:00:00Z'))
      expect(new TextDecoder().decode(encodePeerMap(a)), v.name).to.equal(json)
    }
  })

  it('escapes as Go does and leaves rbtnode\'s own fields out', () => {
    const text = new TextDecoder().decode(encodePeerMap({ peer_id: 'p', did: 'd', did_type: 0, signature: 'c2ln', time: '<&>', peer_signature: 'x' }))
    expect(text).to.equal('{"peer_id":"p","did":"d","did_type":0,"signature":"c2ln","time":"\\u003c\\u0026\\u003e"}')
  })

  it('publishes DID-signed announcements only (a hosting claim cannot verify at a reference node)', () => {
    expect(publishableOnPeerService({ peer_id: 'p', did: 'd', did_type: 0, signature: 'c2ln', time: 't' })).to.equal(true)
    expect(publishableOnPeerService({ peer_id: 'p', did: 'd', did_type: 0, signature: '', time: 't', peer_signature: 'x' })).to.equal(false)
  })

  it('notes what it heard and what became of it, newest first, bounded; ignores what is not a PeerMap', async () => {
    const log = new PeerServiceLog()
    const json = new TextEncoder().encode(vectors[0]!.expected.published_json)
    expect(await log.hear(new TextEncoder().encode('hello'), 'x', async () => true)).to.equal(undefined)
    const kept = await log.hear(json, 'from-a', async () => true)
    expect(kept).to.include({ verified: true, from: 'from-a' })
    const refused = await log.hear(json, 'from-b', async () => false)
    expect(refused?.verified).to.equal(false)
    expect(refused?.reason).to.match(/not kept/)
    const failed = await log.hear(json, undefined, async () => { throw new Error('no route to the DID\'s peer') })
    expect(failed?.reason).to.equal('not checked: no route to the DID\'s peer')
    expect(log.list().map((e) => e.from)).to.deep.equal([null, 'from-b', 'from-a'])
    for (let i = 0; i < PEER_SERVICE_LOG_SIZE + 10; i++) await log.hear(json, 'z', async () => true)
    expect(log.list()).to.have.length(PEER_SERVICE_LOG_SIZE)
  })
})
