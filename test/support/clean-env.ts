/** This process's environment without TOOLBRIDGE_* settings: a child toolbridge run by a test reads only its flags. */
export const cleanEnv = (): Record<string, string> =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLBRIDGE_'))) as Record<
    string,
    string
  >
