/* sockets.c - socket calls whose answers the shim's tries without waiting
 * (MSG_DONTWAIT, poll) could change; each case prints what it got, and
 * programs_check.sh compares the output traced and untraced.
 *
 * Usage: run_sockets [CASE...]   (udp seqpacket empty peek waitall rights; all
 * by default)
 *
 * - udp: 200 datagrams of 1 to 65000 bytes on 127.0.0.1, each answered
 *   by an acknowledgement the sender waits for (lockstep: loopback drops
 *   datagrams a full receive buffer cannot take), received whole by
 *   recvfrom, recvmsg and read; then one received into 100 bytes: recv
 *   with MSG_TRUNC says its length, recvmsg sets MSG_TRUNC;
 * - seqpacket: records of a SOCK_SEQPACKET pair keep their bounds
 *   (send, write, sendmsg of three pieces); one read into a smaller
 *   buffer loses its tail (MSG_TRUNC) and the next read gets the next
 *   record; the peer's close reads as 0;
 * - empty: empty records, on a SOCK_SEQPACKET pair and a connected UDP
 *   socket, made by write, writev, send and sendmsg of 0 bytes: each is a
 *   record, which a read gets as 0 bytes before the record after it;
 * - peek: a MSG_PEEK that waits for data on an empty stream, then a peek
 *   of part, then the read that takes it all; on TCP and AF_UNIX;
 * - waitall: recv and recvmsg with MSG_WAITALL of 200000 bytes sent in
 *   pieces of 1000 with pauses: one call returns them all; at the peer's
 *   close, what was sent (a short count); on TCP and AF_UNIX;
 * - rights: descriptors passed with SCM_RIGHTS (one, then three in one
 *   message; a pipe's read end among them) read what their files hold;
 *   a control buffer too small for three sets MSG_CTRUNC.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void pause_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* The byte at offset i of message n: every message differs. */
static char pattern(int n, size_t i) {
  return (char)('a' + (n * 7 + i * 13 + i / 251) % 26);
}

static void fill(char *buf, int n, size_t len) {
  for (size_t i = 0; i < len; i++) buf[i] = pattern(n, i);
}

static int check(const char *buf, int n, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (buf[i] != pattern(n, i)) return 0;
  return 1;
}

static size_t udp_size(int n) {
  return n == 199 ? 65000 : (size_t)1 + (size_t)(n * 7919) % 30000;
}

/* ---- udp ----------------------------------------------------------------- */

static int udp_bound(struct sockaddr_in *a) {
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  socklen_t len = sizeof *a;
  *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (s < 0 || bind(s, (struct sockaddr *)a, sizeof *a) != 0 ||
      getsockname(s, (struct sockaddr *)a, &len) != 0)
    die("udp socket");
  return s;
}

struct udp_peer {
  int s;
  struct sockaddr_in to;
};

static void *udp_sender(void *arg) {
  struct udp_peer *p = arg;
  char *buf = malloc(65536);
  char ack[8];
  for (int n = 0; n < 201; n++) {
    size_t len = n == 200 ? 3000 : udp_size(n);
    fill(buf, n, len);
    if (sendto(p->s, buf, len, 0, (struct sockaddr *)&p->to, sizeof p->to) != (ssize_t)len)
      die("sendto");
    if (recv(p->s, ack, sizeof ack, 0) != 4) die("recv ack");
  }
  free(buf);
  return NULL;
}

static void udp(void) {
  struct udp_peer p;
  struct sockaddr_in ra;
  int r = udp_bound(&ra);
  p.s = udp_bound(&p.to);
  struct sockaddr_in sa = p.to;
  p.to = ra;
  pthread_t t;
  pthread_create(&t, NULL, udp_sender, &p);
  char *buf = malloc(65536);
  size_t bytes = 0;
  int whole = 0;
  for (int n = 0; n < 200; n++) {
    struct sockaddr_in from;
    socklen_t flen = sizeof from;
    ssize_t got;
    if (n % 3 == 0) {
      got = recvfrom(r, buf, 65536, 0, (struct sockaddr *)&from, &flen);
    } else if (n % 3 == 1) {
      struct iovec v[2] = {{buf, 100}, {buf + 100, 65536 - 100}};
      struct msghdr m = {.msg_name = &from, .msg_namelen = sizeof from, .msg_iov = v, .msg_iovlen = 2};
      got = recvmsg(r, &m, 0);
    } else {
      got = read(r, buf, 65536);
    }
    if (got < 0) die("udp receive");
    bytes += (size_t)got;
    whole += (size_t)got == udp_size(n) && check(buf, n, (size_t)got);
    if (sendto(r, "ack", 4, 0, (struct sockaddr *)&sa, sizeof sa) != 4) die("send ack");
  }
  /* The 201st, 3000 bytes, into 100: recv says 3000 with MSG_TRUNC. */
  ssize_t trunc = recv(r, buf, 100, MSG_TRUNC | MSG_PEEK);
  struct iovec v = {buf, 100};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
  ssize_t got = recvmsg(r, &m, 0);
  if (sendto(r, "ack", 4, 0, (struct sockaddr *)&sa, sizeof sa) != 4) die("send ack");
  pthread_join(t, NULL);
  printf("udp: %d of 200 datagrams whole, %zu bytes; truncated: MSG_TRUNC says %zd, recvmsg %zd%s, "
         "data %s\n",
         whole, bytes, trunc, got, (m.msg_flags & MSG_TRUNC) ? " MSG_TRUNC" : "",
         check(buf, 200, 100) ? "right" : "wrong");
  free(buf);
  close(r);
  close(p.s);
}

/* ---- seqpacket ------------------------------------------------------------- */

static const size_t seq_sizes[] = {1, 100, 4096, 20000, 150000, 7, 65536};
#define SEQ_N (sizeof seq_sizes / sizeof seq_sizes[0])

static void *seq_writer(void *arg) {
  int s = *(int *)arg;
  char *buf = malloc(150000);
  for (int n = 0; n < (int)SEQ_N; n++) {
    size_t len = seq_sizes[n];
    fill(buf, n, len);
    ssize_t w;
    if (n % 3 == 0) {
      w = send(s, buf, len, 0);
    } else if (n % 3 == 1) {
      w = write(s, buf, len);
    } else {
      size_t a = len / 3, b = len / 3;
      struct iovec v[3] = {{buf, a}, {buf + a, b}, {buf + a + b, len - a - b}};
      struct msghdr m = {.msg_iov = v, .msg_iovlen = 3};
      w = sendmsg(s, &m, 0);
    }
    if (w != (ssize_t)len) die("seqpacket send");
    if (n == 2) pause_ms(50); /* the reader waits for the next one */
  }
  free(buf);
  shutdown(s, SHUT_WR);
  return NULL;
}

static void seqpacket(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) die("socketpair seqpacket");
  int sndbuf = 400000;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  pthread_t t;
  pthread_create(&t, NULL, seq_writer, &sv[0]);
  char *buf = malloc(200000);
  printf("seqpacket:");
  for (int n = 0; n < (int)SEQ_N; n++) {
    /* The fourth record (20000) is read into 5000 bytes: its tail is lost. */
    size_t cap = n == 3 ? 5000 : 200000;
    ssize_t got;
    int flags = 0;
    if (n % 2 == 0) {
      got = read(sv[1], buf, cap);
    } else {
      struct iovec v = {buf, cap};
      struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
      got = recvmsg(sv[1], &m, 0);
      flags = m.msg_flags;
    }
    if (got < 0) die("seqpacket read");
    printf(" %zd%s%s", got, (flags & MSG_TRUNC) ? "(MSG_TRUNC)" : "",
           check(buf, n, (size_t)got) ? "" : "(wrong)");
  }
  ssize_t end = read(sv[1], buf, 100);
  printf("; at the close: %zd\n", end);
  pthread_join(t, NULL);
  free(buf);
  close(sv[0]);
  close(sv[1]);
}

/* ---- empty ------------------------------------------------------------------ */

static void empty_on(const char *what, int w, int r) {
  printf("empty %s:", what);
  for (int how = 0; how < 4; how++) {
    char byte = 'x';
    struct iovec v = {&byte, 0};
    struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
    ssize_t s = how == 0 ? write(w, &byte, 0)
              : how == 1 ? writev(w, &v, 1)
              : how == 2 ? send(w, &byte, 0, 0)
                         : sendmsg(w, &m, 0);
    /* A record after it: a lost empty one reads as this one. */
    if (s != 0 || send(w, "after", 5, 0) != 5) die("empty send");
    char buf[16];
    ssize_t a = recv(r, buf, sizeof buf, MSG_DONTWAIT);
    ssize_t b = recv(r, buf, sizeof buf, MSG_DONTWAIT);
    printf(" %s %zd,%zd", how == 0 ? "write" : how == 1 ? "writev" : how == 2 ? "send" : "sendmsg",
           a, b);
  }
  printf("\n");
}

static void empty(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) die("socketpair seqpacket");
  empty_on("seqpacket", sv[0], sv[1]);
  close(sv[0]);
  close(sv[1]);
  struct sockaddr_in ra, wa;
  int r = udp_bound(&ra), w = udp_bound(&wa);
  if (connect(w, (struct sockaddr *)&ra, sizeof ra) != 0) die("connect udp");
  empty_on("udp", w, r);
  close(w);
  close(r);
}

/* ---- peek and waitall: a stream pair, TCP or AF_UNIX ------------------------- */

static void stream_pair(int tcp, int sv[2]) {
  if (!tcp) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
    return;
  }
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 1) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &alen) != 0)
    die("listen");
  sv[0] = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  if (sv[0] < 0 || setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      connect(sv[0], (struct sockaddr *)&a, sizeof a) != 0)
    die("connect");
  sv[1] = accept(l, NULL, NULL);
  if (sv[1] < 0) die("accept");
  close(l);
}

struct sender {
  int s;
  size_t total, piece;
  int pause_every, close_after;
};

static void *send_pieces(void *arg) {
  struct sender *p = arg;
  char *buf = malloc(p->total);
  fill(buf, 1, p->total);
  if (p->pause_every == 0) pause_ms(50); /* the peek waits first */
  for (size_t off = 0, k = 0; off < p->total; off += p->piece, k++) {
    size_t len = p->total - off < p->piece ? p->total - off : p->piece;
    if (send(p->s, buf + off, len, 0) != (ssize_t)len) die("send piece");
    if (p->pause_every && k % (size_t)p->pause_every == 0) pause_ms(2);
  }
  if (p->close_after) shutdown(p->s, SHUT_WR);
  free(buf);
  return NULL;
}

static void peek(int tcp) {
  int sv[2];
  stream_pair(tcp, sv);
  struct sender p = {sv[0], 11, 11, 0, 0};
  pthread_t t;
  pthread_create(&t, NULL, send_pieces, &p);
  char a[64] = {0}, b[64] = {0}, c[64] = {0};
  ssize_t first = recv(sv[1], a, sizeof a, MSG_PEEK);
  pthread_join(t, NULL);
  ssize_t part = recv(sv[1], b, 5, MSG_PEEK);
  ssize_t all = recv(sv[1], c, sizeof c, 0);
  printf("peek %s: waited %zd, peeked %zd, read %zd, same %d\n", tcp ? "tcp" : "unix", first, part,
         all, memcmp(a, c, (size_t)first) == 0 && memcmp(b, c, 5) == 0 && check(c, 1, 11));
  close(sv[0]);
  close(sv[1]);
}

static void waitall(int tcp) {
  for (int how = 0; how < 3; how++) {
    int sv[2];
    stream_pair(tcp, sv);
    /* how 2: the peer sends 150000 of 200000 and closes. */
    struct sender p = {sv[0], how == 2 ? 150000 : 200000, 1000, 20, how == 2};
    pthread_t t;
    pthread_create(&t, NULL, send_pieces, &p);
    char *buf = malloc(200000);
    ssize_t got;
    if (how == 1) {
      struct iovec v[2] = {{buf, 1000}, {buf + 1000, 199000}};
      struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
      got = recvmsg(sv[1], &m, MSG_WAITALL);
    } else {
      got = recv(sv[1], buf, 200000, MSG_WAITALL);
    }
    pthread_join(t, NULL);
    printf("waitall %s %s: %zd%s\n", tcp ? "tcp" : "unix",
           how == 0 ? "recv" : how == 1 ? "recvmsg" : "recv, closed early", got,
           got > 0 && check(buf, 1, (size_t)got) ? "" : " (wrong data)");
    free(buf);
    close(sv[0]);
    close(sv[1]);
  }
}

/* ---- rights ---------------------------------------------------------------- */

static void send_fds(int s, const int *fds, int n) {
  char cbuf[CMSG_SPACE(3 * sizeof(int))];
  memset(cbuf, 0, sizeof cbuf);
  struct iovec v = {"F", 1};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
                     .msg_controllen = CMSG_SPACE(n * sizeof(int))};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(n * sizeof(int));
  memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  if (sendmsg(s, &m, 0) != 1) die("sendmsg SCM_RIGHTS");
}

/* Receives a message with descriptors into a control buffer of room
 * descriptors; returns how many came, *ctrunc set from msg_flags. */
static int recv_fds(int s, int *fds, int room, int *ctrunc) {
  char cbuf[CMSG_SPACE(3 * sizeof(int))];
  char byte;
  struct iovec v = {&byte, 1};
  struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
                     .msg_controllen = CMSG_SPACE(room * sizeof(int))};
  if (recvmsg(s, &m, 0) != 1) die("recvmsg SCM_RIGHTS");
  *ctrunc = (m.msg_flags & MSG_CTRUNC) != 0;
  int n = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      memcpy(fds, CMSG_DATA(c), n * sizeof(int));
    }
  return n;
}

static int file_with(const char *text) {
  FILE *f = tmpfile();
  if (!f) die("tmpfile");
  int fd = dup(fileno(f));
  fclose(f);
  if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) || lseek(fd, 0, SEEK_SET) != 0)
    die("file_with");
  return fd;
}

struct rights_peer {
  int s;
};

static void *rights_sender(void *arg) {
  struct rights_peer *p = arg;
  pause_ms(30); /* the receiver waits in recvmsg first */
  int one = file_with("first file\n");
  send_fds(p->s, &one, 1);
  close(one);
  int pfd[2];
  if (pipe(pfd) != 0) die("pipe");
  if (write(pfd[1], "through a pipe\n", 15) != 15) die("write pipe");
  close(pfd[1]);
  int three[3] = {file_with("second\n"), pfd[0], file_with("third\n")};
  send_fds(p->s, three, 3);
  send_fds(p->s, three, 3); /* into room for one: MSG_CTRUNC */
  for (int i = 0; i < 3; i++) close(three[i]);
  return NULL;
}

static void read_fd(int fd) {
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = 0;
  buf[strcspn(buf, "\n")] = 0;
  printf(" \"%s\"", buf);
}

static void rights(void) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) die("socketpair");
  struct rights_peer p = {sv[0]};
  pthread_t t;
  pthread_create(&t, NULL, rights_sender, &p);
  int fds[3], ctrunc;
  printf("rights:");
  int n = recv_fds(sv[1], fds, 1, &ctrunc);
  printf(" %d fd%s", n, ctrunc ? " MSG_CTRUNC" : "");
  for (int i = 0; i < n; i++) read_fd(fds[i]), close(fds[i]);
  n = recv_fds(sv[1], fds, 3, &ctrunc);
  printf("; %d fds%s", n, ctrunc ? " MSG_CTRUNC" : "");
  for (int i = 0; i < n; i++) read_fd(fds[i]), close(fds[i]);
  n = recv_fds(sv[1], fds, 1, &ctrunc);
  printf("; into room for 1: %d fd%s\n", n, ctrunc ? " MSG_CTRUNC" : "");
  for (int i = 0; i < n; i++) close(fds[i]);
  pthread_join(t, NULL);
  close(sv[0]);
  close(sv[1]);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *all[] = {"udp", "seqpacket", "empty", "peek", "waitall", "rights"};
  int n = argc > 1 ? argc - 1 : 6;
  for (int i = 0; i < n; i++) {
    const char *c = argc > 1 ? argv[i + 1] : all[i];
    if (strcmp(c, "udp") == 0) {
      udp();
    } else if (strcmp(c, "seqpacket") == 0) {
      seqpacket();
    } else if (strcmp(c, "empty") == 0) {
      empty();
    } else if (strcmp(c, "peek") == 0) {
      peek(1);
      peek(0);
    } else if (strcmp(c, "waitall") == 0) {
      waitall(1);
      waitall(0);
    } else if (strcmp(c, "rights") == 0) {
      rights();
    } else {
      fprintf(stderr, "run_sockets: no case %s\n", c);
      return 2;
    }
  }
  return 0;
}
