/** The prompt seam: commands ask through it, tests hand in a stub. inquirer loads only when asked. */
export interface Prompter {
  readonly interactive: boolean
  password: (message: string) => Promise<string>
}

export function terminalPrompter (): Prompter {
  return {
    interactive: process.stdin.isTTY === true,
    async password (message) {
      const inquirer = (await import('inquirer')).default
      const answer = await inquirer.prompt([{ type: 'password', name: 'value', message, mask: '*' }], { output: process.stderr } as never)
      return String((answer as { value: unknown }).value)
    }
  }
}
