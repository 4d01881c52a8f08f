/** The runtime most gateway tests start, on a free port with the in-process invoker: those defaults in one place. */
import { afterAll, beforeAll } from 'vitest'
import { loadProject, type Project } from '../../bridge/project/project.ts'
import { resolveSettings, type SettingFlags } from '../../bridge/project/settings.ts'
import { startRuntime, type Runtime } from '../../bridge/runtime.ts'

/** `project` is a loaded project or the path of its serverless.yml; `flags` add to or replace the defaults. */
export function startInProcess(
  project: Project | string,
  flags: SettingFlags = {},
  options?: Parameters<typeof startRuntime>[2],
): Promise<Runtime> {
  const loaded = typeof project === 'string' ? loadProject(project) : project
  return startRuntime(loaded, resolveSettings({ port: '0', invoker: 'in-process', ...flags }, {}), options)
}

/** Within a describe: the project served in process for its tests, its `/mcp` address read once it is up. */
export function mcpServedInProcess(yml: string, flags: SettingFlags = {}): { readonly url: string } {
  let runtime: Runtime | undefined
  beforeAll(async () => {
    runtime = await startInProcess(yml, flags)
  })
  afterAll(() => runtime?.stop())
  return {
    get url() {
      return `${runtime!.gateway!.url}/mcp`
    },
  }
}
