/** What a call throws, for tests that look into the error; a call that returns instead fails the test. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('did not throw')
}
