"""``kubectl kopf-scheduler``: the scheduler's commands as a kubectl plugin, with kubectl's flags.

kubectl runs any executable named ``kubectl-<name>`` on the PATH as ``kubectl <name>``; the
package installs ``kubectl-kopf_scheduler`` (kubectl turns ``-`` in the command into ``_`` in the
name), so ``kubectl kopf-scheduler explain web -n team`` works wherever the package is installed.
"""
