/* pool.c - the small persistent thread pool behind bcg_run_threads.
 *
 * A context owns at most one pool (gen/compile.c makes it on the first
 * threaded run that has enough work, and bcg_context_free joins it).  The
 * workers start lazily, as many as a run asks for (at most
 * POOL_MAX_WORKERS), then sleep on a condition variable between runs.
 *
 * A run is PARTS independent pieces of one task on up to THREADS threads.
 * The calling thread posts the task, wakes the workers and takes pieces
 * itself; at most THREADS - 1 workers join it (a pool started for more
 * threads by an earlier run leaves the others asleep).  Pieces are claimed
 * one at a time under the lock, so the result never depends on how many
 * workers exist or wake in time (a worker that could not be started, or is
 * still asleep, simply leaves its pieces to the others), and a thread that
 * another process slows down takes fewer pieces.  One run at a time per
 * pool: a second caller waits on `run_lock`.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "runtime.h"

struct pool {
    pthread_mutex_t run_lock;   /* held by the caller of pool_run for the whole run */
    pthread_mutex_t lock;       /* everything below */
    pthread_cond_t wake;        /* workers: a new run was posted, or stop */
    pthread_cond_t done;        /* caller: the last piece finished */
    int worker_count;
    pthread_t workers[POOL_MAX_WORKERS];
    bool stopping;
    unsigned long generation;   /* bumped for each run, so a worker joins each run once */
    unsigned long started_at;   /* the generation before the run that starts a worker */
    pool_task task;
    void *arg;
    int parts, next_part, finished_parts;
    int helpers, joined;        /* workers allowed to join this run, and joined */
};

/* Takes and runs pieces of the current run until none is left.  Called and
 * returns with p->lock held. */
static void take_pieces(pool *p)
{
    while (p->next_part < p->parts) {
        int part = p->next_part++;
        pool_task task = p->task;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->lock);
        task(arg, part);
        pthread_mutex_lock(&p->lock);
        if (++p->finished_parts == p->parts)
            pthread_cond_signal(&p->done);
    }
}

static void *worker_main(void *argument)
{
    pool *p = argument;
    pthread_mutex_lock(&p->lock);
    /* (not p->generation: the run that started this worker has bumped it
     * by the time the worker gets the lock, and the worker joins that run) */
    unsigned long seen = p->started_at;
    for (;;) {
        while (!p->stopping && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stopping)
            break;
        seen = p->generation;
        if (p->joined < p->helpers) {
            p->joined++;
            take_pieces(p);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

pool *pool_new(void)
{
    pool *p = mem_alloc(sizeof *p);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->run_lock, NULL) != 0) {
        mem_free(p);
        return NULL;
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        pthread_mutex_destroy(&p->run_lock);
        mem_free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->run_lock);
        mem_free(p);
        return NULL;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->run_lock);
        mem_free(p);
        return NULL;
    }
    return p;
}

void pool_run(pool *p, int threads, int parts, pool_task task, void *arg)
{
    if (parts <= 0)
        return;
    pthread_mutex_lock(&p->run_lock);
    /* Start the missing workers: THREADS - 1 besides the caller, never more
     * than there are pieces for.  A failure only means fewer helpers. */
    int want = threads < parts ? threads - 1 : parts - 1;
    if (want > POOL_MAX_WORKERS)
        want = POOL_MAX_WORKERS;
    pthread_mutex_lock(&p->lock);
    p->started_at = p->generation;
    while (p->worker_count < want) {
        if (pthread_create(&p->workers[p->worker_count], NULL, worker_main, p) != 0)
            break;
        p->worker_count++;
    }
    p->task = task;
    p->arg = arg;
    p->parts = parts;
    p->next_part = 0;
    p->finished_parts = 0;
    p->helpers = want;
    p->joined = 0;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    take_pieces(p);
    while (p->finished_parts < p->parts)
        pthread_cond_wait(&p->done, &p->lock);
    p->task = NULL;
    p->arg = NULL;
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}

int pool_worker_count(pool *p)
{
    pthread_mutex_lock(&p->lock);
    int count = p->worker_count;
    pthread_mutex_unlock(&p->lock);
    return count;
}

void pool_free(pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->worker_count; i++)
        pthread_join(p->workers[i], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    mem_free(p);
}
