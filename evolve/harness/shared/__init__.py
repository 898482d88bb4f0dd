"""What the harness's processes say to each other and share: the messages and their schemas, the pipes' frames, the
lifeline, the users and processes of an evaluation, CUDA IPC, the problem and its formats, the error metrics, the
input seeds. It imports nothing of the parent's, the measurer's or the runner's folder."""
