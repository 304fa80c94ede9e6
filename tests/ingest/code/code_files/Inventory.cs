using System;
using System.Collections.Generic;
using Shop.Models;

namespace Shop.Services
{
    /// <summary>Tracks stock levels per product.</summary>
    public interface IInventory
    {
        int Available(string sku);
    }

    /// <summary>In-memory inventory with reservations.</summary>
    public class Inventory : IInventory
    {
        private readonly Dictionary<string, int> _stock = new Dictionary<string, int>();

        public Inventory(IEnumerable<Product> products)
        {
            foreach (var p in products)
            {
                _stock[p.Sku] = p.Quantity;
            }
        }

        public int Available(string sku) => _stock.TryGetValue(sku, out var n) ? n : 0;

        /// <summary>Reserve units, or throw when too few are left.</summary>
        public Reservation Reserve(string sku, int count)
        {
            if (Available(sku) < count)
            {
                throw new OutOfStockException(sku, count);
            }
            _stock[sku] -= count;
            Console.WriteLine($"reserved {count} of {sku}");
            return new Reservation(sku, count, DateTime.UtcNow);
        }
    }

    public record Reservation(string Sku, int Count, DateTime At);
}
