"""The physical collaboration suite: rollouts, demonstrations, evaluation, baselines."""
