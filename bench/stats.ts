/** Small helpers for benchmark figures. */
export function percentile (values: number[], p: number): number {
  if (values.length === 0) return NaN
  const s = [...values].sort((a, b) => a - b)
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))
  return s[i]
}
export const median = (v: number[]): number => percentile(v, 50)
export const ms = (v: number): string => `${v.toFixed(1)} ms`
export function isMain (metaUrl: string): boolean {
  return process.argv[1] !== undefined && metaUrl === new URL(`file://${process.argv[1]}`).href
}
