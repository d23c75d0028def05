/**
 * Lifecycle contract for every long-lived service. The composition root starts services in
 * dependency order and stops them in reverse order; stop() must be safe to call once after a
 * successful start() and should release every socket, timer and handle the service owns.
 */
export interface Startable {
  start: () => Promise<void>
  stop: () => Promise<void>
}

export type StartableStatus = 'stopped' | 'starting' | 'started' | 'stopping'
