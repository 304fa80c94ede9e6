package com.example.jobs

import kotlinx.coroutines.delay
import java.time.Duration
import com.example.jobs.model.Job as JobModel

/** Runs jobs with exponential back-off between attempts. */
class Scheduler(private val store: JobStore, private val maxAttempts: Int = 5) {

    private val running = mutableMapOf<String, JobModel>()

    /** Run one job, retrying failures. */
    suspend fun run(job: JobModel): Result<Unit> {
        var attempt = 0
        while (attempt < maxAttempts) {
            running[job.id] = job
            val outcome = runCatching { job.execute() }
            if (outcome.isSuccess) {
                store.markDone(job.id)
                return outcome
            }
            attempt++
            delay(backoff(attempt).toMillis())
        }
        store.markFailed(job.id)
        return Result.failure(RetriesExhausted(job.id))
    }

    fun backoff(attempt: Int): Duration = Duration.ofMillis(100L shl attempt)
}

object Defaults {
    const val MAX_ATTEMPTS = 5
}

interface JobStore {
    fun markDone(id: String)
    fun markFailed(id: String)
}

fun scheduleAll(scheduler: Scheduler, jobs: List<JobModel>) = jobs.forEach { println(it.id) }
