import { expect } from 'chai'
import { freePort } from './ports.js'

describe('test helper: freePort', () => {
  it('never hands out the same port twice in one test process (an API and a swarm port once coincided)', async () => {
    const seen = new Set<number>()
    for (let i = 0; i < 400; i++) seen.add(await freePort())
    expect(seen.size).to.equal(400)
  })
})
