package bank.ledger

import scala.collection.mutable
import java.time.Instant
import bank.model.{Account, Entry}

/** A double-entry ledger kept in memory. */
trait Ledger {
  def post(debit: Account, credit: Account, amount: BigDecimal): Entry
  def balance(account: Account): BigDecimal
}

/** The default ledger; entries are never removed. */
class MemoryLedger(clock: () => Instant) extends Ledger {
  private val entries = mutable.ArrayBuffer.empty[Entry]

  /** Record a transfer between two accounts. */
  def post(debit: Account, credit: Account, amount: BigDecimal): Entry = {
    require(amount > 0, "amount must be positive")
    val entry = Entry(debit.id, credit.id, amount, clock())
    entries += entry
    Audit.log(entry)
    entry
  }

  def balance(account: Account): BigDecimal =
    entries.foldLeft(BigDecimal(0)) { (sum, e) =>
      if (e.credit == account.id) sum + e.amount
      else if (e.debit == account.id) sum - e.amount
      else sum
    }
}

object Audit {
  def log(entry: Entry): Unit = println(s"posted ${entry.amount}")
}

case class Snapshot(at: Instant, balances: Map[String, BigDecimal])
