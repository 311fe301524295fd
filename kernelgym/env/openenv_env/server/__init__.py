"""The OpenEnv server module of the packaged KernelGym environment (`server.app:app`)."""
