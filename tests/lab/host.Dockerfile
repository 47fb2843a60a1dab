# The lab's systemd host: Debian 12 from debootstrap, made to boot as a container.
ARG BASE
FROM ${BASE}
# Each host makes its own SSH host keys at first boot (an image must not share them; the root file
# system comes without any, build-image.sh).
# Units that need hardware or a console stall or fail inside a container.
RUN systemctl mask getty.target console-getty.service systemd-udevd.service \
      systemd-udev-trigger.service systemd-remount-fs.service systemd-firstboot.service \
      sys-kernel-debug.mount sys-kernel-tracing.mount dev-hugepages.mount \
    && systemctl enable ssh \
    && printf '[Service]\nExecStartPre=\nExecStartPre=/usr/bin/ssh-keygen -A\nExecStartPre=/usr/sbin/sshd -t\n' > /etc/ssh/hostkeys.conf \
    && mkdir -p /etc/systemd/system/ssh.service.d \
    && mv /etc/ssh/hostkeys.conf /etc/systemd/system/ssh.service.d/hostkeys.conf \
    && echo 'root:!' | chpasswd -e \
    && : > /etc/machine-id
# python3-apt is on every Debian/Ubuntu server install; without it the apt module cannot run in
# check mode, which the roles' tests use on fresh hosts.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-apt \
    && apt-get clean
# A bytecode cache for the modules Ansible runs here (pyc/lab_pyc.py): the lab's CPU, not its behaviour.
COPY pyc/lab_pyc.py /usr/lib/python3/dist-packages/lab_pyc.py
RUN echo 'import lab_pyc' > /usr/lib/python3/dist-packages/lab-pyc.pth
ENV container=docker
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
