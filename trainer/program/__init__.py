"""The training program behind trainer.main: flags, building a job, devices, flagfiles, diagnosis, local clusters."""
