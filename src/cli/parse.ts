/** Small parsers for flag values, shared by commands. */
export function splitList (value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '')
}
