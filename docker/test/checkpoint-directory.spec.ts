import fs from 'node:fs';
import path from 'node:path';
import { judgeCheckpointDirectory, type DirectoryStats } from '@pserver/checkpoint';
import { compose, dockerDir, kubernetesObjects } from './deployment-files';

// The pserver refuses to start on a checkpoint directory that is not its own or that others can
// write to (exit 5). These tests derive, from the shipped files, the directory each deployment
// gives it and the identity it runs with, and check the verdict: a change to the image's user,
// the pserver Job's fsGroup or the rule that would make the shipped deployment refuse fails here.

const directory = 0o040000;

function stats(uid: number, gid: number, mode: number): DirectoryStats {
  return { uid, gid, mode: directory | mode, isDirectory: () => true };
}

/** The image's `USER uid:gid` and how its /checkpoints is made. */
function image(): { uid: number; gid: number; made: { uid: number; gid: number; mode: number } } {
  const dockerfile = fs.readFileSync(path.join(dockerDir, 'Dockerfile'), 'utf8');
  const user = /^USER (\d+):(\d+)\s*$/m.exec(dockerfile);
  const made = /install -d -m ([0-7]+) -o (\d+) -g (\d+) \/checkpoints/.exec(dockerfile);
  if (!user || !made) throw new Error('Dockerfile: no numeric USER, or /checkpoints not made');
  return {
    uid: Number(user[1]),
    gid: Number(user[2]),
    made: { mode: parseInt(made[1]!, 8), uid: Number(made[2]), gid: Number(made[3]) },
  };
}

describe('the checkpoint directory the shipped deployments give the pserver', () => {
  it('passes the check in compose (a named volume takes the image directory’s owner and mode)', () => {
    const { uid, gid, made } = image();
    const pserver = Object.values(compose().services).find((s) =>
      s.command?.includes('--checkpoint-dir=/checkpoints'),
    ) as { volumes?: string[] } | undefined;
    expect(pserver?.volumes).toContain('checkpoints:/checkpoints');
    // Made owner-only: no warning either.
    const verdict = judgeCheckpointDirectory('/checkpoints', stats(made.uid, made.gid, made.mode), {
      uid,
      groups: [gid],
    });
    expect(verdict).toEqual({ ok: true });
  });

  it('passes the check in Kubernetes, where the kubelet applies the pod’s fsGroup to the volume', () => {
    const { uid, gid } = image();
    const deployment = kubernetesObjects().find(
      (o) => o.object.kind === 'Job' && o.object.metadata.name === 'pserver',
    )!.object;
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(container.volumeMounts).toContainEqual({
      name: 'checkpoints',
      mountPath: '/checkpoints',
    });
    const runAsUser = container.securityContext?.runAsUser ?? pod.securityContext?.runAsUser ?? uid;
    const fsGroup: number = pod.securityContext.fsGroup;
    const identity = { uid: runAsUser, groups: [gid, fsGroup] };
    // The kubelet chgrps the volume to fsGroup and adds g+rwx and setgid; the volume's root is
    // typically owned by root (a fresh filesystem), and its other bits are the provisioner's.
    for (const others of [0, 0o5]) {
      expect(
        judgeCheckpointDirectory('/checkpoints', stats(0, fsGroup, 0o2770 | others), identity),
      ).toMatchObject({ ok: true });
    }
    // A shard directory this pserver made (0700), after the kubelet went over it on a remount.
    expect(
      judgeCheckpointDirectory('/checkpoints/shard-0', stats(runAsUser, fsGroup, 0o2770), identity),
    ).toEqual({ ok: true });
    // A volume the provisioner left world-writable is refused all the same.
    expect(
      judgeCheckpointDirectory('/checkpoints', stats(0, fsGroup, 0o2777), identity),
    ).toMatchObject({ ok: false, problem: 'is writable by others' });
  });
});
