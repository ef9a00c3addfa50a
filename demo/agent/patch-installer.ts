/**
 * The simulated agent's side of patch installs (docs/patching.md): it answers `patch.install` without installing
 * anything, one `patch.result` per patch, as its behaviour says: every patch installed by default; `outcomeOf` names
 * the outcome per patch (installed, failed, reboot-required). A `reboot-required` patch under a reboot policy other
 * than `never` "reboots" the device: the agent heartbeats again afterwards, as a rebooted device would.
 */
import type { PatchInstallMessage } from '#shared/live-query/protocol.ts';

export type PatchOutcome = 'installed' | 'failed' | 'reboot-required';

export interface PatchBehaviour {
  /** The outcome of one patch (default installed). */
  outcomeOf?: (patch: PatchInstallMessage['patches'][number]) => PatchOutcome;
  /** Every patch.install received, in order (for tests and the demo's log). */
  received?: PatchInstallMessage[];
}

export function patchInstaller(behaviour: PatchBehaviour, afterReboot: () => void) {
  return {
    receive(message: Record<string, unknown>, send: (text: string) => void): void {
      const install = message as unknown as PatchInstallMessage;
      behaviour.received?.push(install);
      let rebooted = false;
      for (const patch of install.patches ?? []) {
        const outcome = behaviour.outcomeOf?.(patch) ?? 'installed';
        if (outcome === 'reboot-required' && install.rebootPolicy !== 'never') rebooted = true;
        send(
          JSON.stringify({
            type: 'patch.result',
            jobId: install.jobId,
            patchId: patch.patchId,
            outcome,
            exitCode: outcome === 'failed' ? 1603 : 0,
            ...(outcome === 'failed' ? { message: `Installing ${patch.externalId} failed (0x80070643)` } : {}),
          }),
        );
      }
      if (rebooted || install.rebootPolicy === 'always') afterReboot();
    },
  };
}
