import { expect } from 'chai'
import { createLan, requireNetns, type Lan } from './netns.js'

/** Whether member `from` opens a TCP connection to `to`'s listener within a second (run inside `from`'s namespace). */
async function reaches (lan: Lan, from: number, to: number): Promise<boolean> {
  const script = `const s=require('net').connect(7070,'${lan.members[to]!.ip}');s.setTimeout(1000);s.on('connect',()=>{console.log('ok');s.destroy()});s.on('timeout',()=>{console.log('no');s.destroy()});s.on('error',()=>{console.log('no')})`
  return (await lan.members[from]!.ns.run(process.execPath, ['-e', script])).trim() === 'ok'
}

describe('test helper: createLan (namespaces on a bridge, partitions)', function () {
  this.timeout(60_000)
  let lan: Lan | undefined

  before(async function () {
    await requireNetns(this)
    lan = await createLan('lan-test', 3)
    // a TCP listener on every member's LAN address
    for (const m of lan.members) {
      const child = m.ns.spawn(process.execPath, ['-e', `require('net').createServer((c)=>c.end()).listen(7070,'${m.ip}',()=>console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] })
      await new Promise<void>((resolve) => { child.stdout?.once('data', () => { resolve() }) })
    }
  })

  after(async () => { await lan?.dispose() })

  it('members reach each other; a cut member reaches nobody until reconnected', async () => {
    const l = lan!
    expect(l.members.map((m) => m.ip)).to.deep.equal(['10.77.0.2', '10.77.0.3', '10.77.0.4'])
    expect(await reaches(l, 0, 1)).to.equal(true)
    expect(await reaches(l, 2, 0)).to.equal(true)
    await l.cut(1)
    expect(await reaches(l, 0, 1)).to.equal(false)
    expect(await reaches(l, 1, 2)).to.equal(false)
    expect(await reaches(l, 0, 2)).to.equal(true)
    await l.reconnect(1)
    expect(await reaches(l, 0, 1)).to.equal(true)
    expect(await reaches(l, 1, 2)).to.equal(true)
  })

  it('a separated pair stops reaching each other, both still reach the rest; join heals it', async () => {
    const l = lan!
    await l.separate(0, 2)
    await l.separate(0, 2) // twice is once
    expect(await reaches(l, 0, 2)).to.equal(false)
    expect(await reaches(l, 2, 0)).to.equal(false)
    expect(await reaches(l, 0, 1)).to.equal(true)
    expect(await reaches(l, 2, 1)).to.equal(true)
    await l.join(0, 2)
    await l.join(0, 2)
    expect(await reaches(l, 0, 2)).to.equal(true)
    expect(await reaches(l, 2, 0)).to.equal(true)
  })
})
