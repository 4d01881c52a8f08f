/**
 * How a bench ends: a broker client left open would keep the process alive
 * after `main`, so the bench exits on its own, with one line when it failed.
 */

/**
 * Runs a bench's `main` and exits: 0 when it ends, 1 with one line when it
 * throws (a broker client left open would otherwise keep the process alive).
 */
export async function runBench(main: () => Promise<void>, onFailure?: () => void): Promise<never> {
  try {
    await main()
    process.exit(0)
  } catch (err) {
    console.error(`\nbench failed: ${(err as Error).message}`)
    onFailure?.()
    process.exit(1)
  }
}
