import { createServer } from 'node:net'

/** Ports this test process has handed out: the OS may offer a just-released port again. */
const handedOut = new Set<number>()

async function osPort (): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createServer()
    s.unref()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => { resolve(port) })
    })
  })
}

/**
 * A TCP port that was free a moment ago (the OS picks it) and that this process has not handed
 * out before, so two ports asked for one node (API and swarm) never coincide.
 */
export async function freePort (): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await osPort()
    if (!handedOut.has(port)) {
      handedOut.add(port)
      return port
    }
  }
  throw new Error('no fresh free port after 100 tries')
}
