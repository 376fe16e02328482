"""What is said about runs: findings, verdicts, ranking and repeats, sweeps, the
check gate, timings and memory in words. Imports model/ and reads/.
"""
