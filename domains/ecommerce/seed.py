"""The default shop: a small electronics catalogue with stock gaps, coupons and past orders.

Stock gaps are deliberate: the cheapest 27-inch monitor, the cheapest noise-cancelling
headphones and the cheapest 2 m HDMI cable cannot be bought (as asked), so "cheapest in
stock" differs from "cheapest".
"""

from __future__ import annotations

from chaosproxy.domains.ecommerce.state import (
    Category,
    Coupon,
    Customer,
    Order,
    OrderLine,
    OrderStatus,
    Product,
    ShopState,
    Stock,
    shipping_for,
)

Attrs = dict[str, str | int | float | bool]

# fmt: off
_PRODUCTS: list[tuple[str, str, str, Category, int, float, int, str | None, Attrs]] = [
    ("KB-7712", "Keychron K2 Wireless Mechanical Keyboard", "Keychron", "keyboards", 8900, 4.6, 25,
     None, {"wireless": True, "layout": "75%"}),
    ("KB-7730", "Logitech MX Keys Wireless Keyboard", "Logitech", "keyboards", 10999, 4.7, 14, None,
     {"wireless": True, "layout": "full-size"}),
    ("KB-7745", "Razer BlackWidow V4 Mechanical Keyboard", "Razer", "keyboards", 16999, 4.5, 6,
     None, {"wireless": False, "layout": "full-size"}),
    ("MS-3100", "Logitech MX Master 3S Wireless Mouse", "Logitech", "mice", 9999, 4.8, 18, None,
     {"wireless": True, "dpi": 8000}),
    ("MS-3120", "Logitech M720 Triathlon Wireless Mouse", "Logitech", "mice", 4999, 4.5, 9, None,
     {"wireless": True, "dpi": 1000}),
    ("MS-3150", "Razer Basilisk V3 Gaming Mouse", "Razer", "mice", 6999, 4.6, 11, None,
     {"wireless": False, "dpi": 26000}),
    ("MS-3170", "Microsoft Bluetooth Mouse", "Microsoft", "mice", 2499, 4.3, 30, None,
     {"wireless": True, "dpi": 1000}),
    ("MS-3175", "Amazon Basics Wireless Mouse", "Amazon Basics", "mice", 1499, 4.1, 0, "2026-03-20",
     {"wireless": True, "dpi": 1600}),
    ("MN-2701", "Dell S2721DS 27-inch QHD Monitor", "Dell", "monitors", 24999, 4.5, 0, "2026-03-16",
     {"size_in": 27, "resolution": "2560x1440", "refresh_hz": 75}),
    ("MN-2705", "LG 27GL83A 27-inch QHD Gaming Monitor", "LG", "monitors", 27999, 4.6, 7, None,
     {"size_in": 27, "resolution": "2560x1440", "refresh_hz": 144}),
    ("MN-2710", "Samsung Odyssey G5 27-inch Curved Monitor", "Samsung", "monitors", 29999, 4.4, 5,
     None, {"size_in": 27, "resolution": "2560x1440", "refresh_hz": 165}),
    ("MN-2715", "ASUS ProArt PA278QV 27-inch Monitor", "ASUS", "monitors", 42900, 4.7, 3, None,
     {"size_in": 27, "resolution": "2560x1440", "refresh_hz": 75}),
    ("MN-2401", "AOC 24G2 24-inch Gaming Monitor", "AOC", "monitors", 16999, 4.6, 12, None,
     {"size_in": 24, "resolution": "1920x1080", "refresh_hz": 144}),
    ("MN-3201", "Samsung M7 32-inch Smart Monitor", "Samsung", "monitors", 34999, 4.3, 2, None,
     {"size_in": 32, "resolution": "3840x2160", "refresh_hz": 60}),
    ("HP-1101", "Sony WH-1000XM5 Noise Cancelling Headphones", "Sony", "audio", 39800, 4.7, 8, None,
     {"noise_cancelling": True, "form_factor": "over-ear", "wireless": True}),
    ("HP-1105", "Bose QuietComfort 45 Noise Cancelling Headphones", "Bose", "audio", 27900, 4.6, 0,
     "2026-04-01", {"noise_cancelling": True, "form_factor": "over-ear", "wireless": True}),
    ("HP-1110", "Anker Soundcore Space Q45 Noise Cancelling Headphones", "Anker", "audio", 14999,
     4.4, 4, None, {"noise_cancelling": True, "form_factor": "over-ear", "wireless": True}),
    ("HP-1115", "JBL Tune 770NC Noise Cancelling Headphones", "JBL", "audio", 12995, 4.3, 0,
     "2026-03-25", {"noise_cancelling": True, "form_factor": "over-ear", "wireless": True}),
    ("HP-1120", "Sennheiser HD 560S Open-Back Headphones", "Sennheiser", "audio", 19900, 4.7, 6,
     None, {"noise_cancelling": False, "form_factor": "over-ear", "wireless": False}),
    ("HP-1130", "Sony WF-C700N Noise Cancelling Earbuds", "Sony", "audio", 9999, 4.2, 10, None,
     {"noise_cancelling": True, "form_factor": "in-ear", "wireless": True}),
    ("CB-2040", "Anker USB-C to USB-C Cable 2 m", "Anker", "cables", 1299, 4.7, 60, None,
     {"length_m": 2, "connector": "USB-C"}),
    ("CB-2041", "Anker USB-C to USB-C Cable 1 m", "Anker", "cables", 999, 4.7, 45, None,
     {"length_m": 1, "connector": "USB-C"}),
    ("HD-0405", "Basics HDMI 2.1 Cable 1 m", "Basics", "cables", 699, 4.2, 100, None,
     {"length_m": 1, "connector": "HDMI 2.1"}),
    ("HD-0410", "AmazonBasics HDMI 2.1 Cable 2 m", "Amazon Basics", "cables", 1149, 4.4, 3, None,
     {"length_m": 2, "connector": "HDMI 2.1"}),
    ("HD-0420", "Belkin HDMI 2.1 Cable 2 m", "Belkin", "cables", 1499, 4.6, 40, None,
     {"length_m": 2, "connector": "HDMI 2.1"}),
    ("HD-0430", "Cable Matters HDMI 2.1 Cable 3 m", "Cable Matters", "cables", 1699, 4.5, 22, None,
     {"length_m": 3, "connector": "HDMI 2.1"}),
    ("CH-6502", "Anker 65W USB-C Charger", "Anker", "power", 4599, 4.7, 20, None, {"watts": 65}),
    ("PB-2000", "Anker PowerCore 20000 Power Bank", "Anker", "power", 4999, 4.6, 15, None,
     {"capacity_mah": 20000}),
    ("PB-2010", "Anker PowerCore 10000 Power Bank", "Anker", "power", 2599, 4.5, 0, "2026-03-12",
     {"capacity_mah": 10000}),
    ("PC-0801", "Spigen Ultra Hybrid Phone Case", "Spigen", "phone", 1999, 4.5, 35, None,
     {"material": "TPU"}),
    ("SP-0802", "Tempered Glass Screen Protector (2-pack)", "Spigen", "phone", 999, 4.4, 50, None,
     {"pack": 2}),
    ("WC-1080", "Logitech C920 HD Pro Webcam", "Logitech", "webcams", 6999, 4.6, 12, None,
     {"resolution": "1080p"}),
    ("GC-0100", "Shop Gift Card $100", "Shop", "gift-cards", 10000, 5.0, 999, None,
     {"final_sale": True}),
]
# fmt: on

# fmt: off
_CUSTOMERS = [
    ("C-1001", "Ana Ruiz", "500 Market St, Suite 300, San Francisco, CA 94105"),
    ("C-1002", "Ben Carter", "220 Maple Drive, Columbus, OH 43004"),
    ("C-1003", "Chloe Nguyen", "88 Harbor Way, Apt 4B, Seattle, WA 98101"),
    ("C-1004", "David Kim", "15 Oak Street, Austin, TX 78701"),
    ("C-1005", "Elena Petrova", "9 Birch Lane, Denver, CO 80202"),
    ("C-1006", "Farah Haddad", "47 Cedar Court, Raleigh, NC 27601"),
    ("C-1007", "Gabriel Silva", "301 Pine Ave, Portland, OR 97205"),
    ("C-1008", "Hana Sato", "12 Elm Row, Boston, MA 02108"),
]
# fmt: on

_COUPONS = [
    Coupon(
        code="WELCOME10",
        description="10% off a customer's first order (up to $50.00)",
        percent_off=10,
        max_discount_cents=5000,
        first_order_only=True,
        expires_on="2026-12-31",
    ),
    Coupon(
        code="SAVE15",
        description="15% off orders of $200.00 or more (up to $75.00)",
        percent_off=15,
        min_subtotal_cents=20000,
        max_discount_cents=7500,
        expires_on="2026-06-30",
    ),
    Coupon(
        code="FLAT25",
        description="$25.00 off orders of $100.00 or more",
        amount_off_cents=2500,
        min_subtotal_cents=10000,
        expires_on="2026-04-30",
    ),
    Coupon(
        code="AUDIO20",
        description="20% off audio products when they total $100.00 or more",
        percent_off=20,
        min_subtotal_cents=10000,
        category="audio",
        expires_on="2026-03-31",
    ),
    Coupon(
        code="WINTER30",
        description="30% off everything (winter sale)",
        percent_off=30,
        expires_on="2026-02-28",
    ),
]

OrderRow = tuple[str, str, list[tuple[str, int]], str | None, int, OrderStatus, str, str | None]

# fmt: off
_ORDERS: list[OrderRow] = [
    ("ORD-50001", "C-1001", [("WC-1080", 1)], None, 0, "delivered", "2025-12-30", "2026-01-04"),
    ("ORD-50002", "C-1002", [("HP-1110", 1), ("CB-2040", 1)], None, 0, "delivered", "2026-02-16",
     "2026-02-20"),
    ("ORD-50003", "C-1003", [("PC-0801", 1), ("SP-0802", 2), ("CH-6502", 1)], None, 0, "delivered",
     "2026-02-20", "2026-02-24"),
    ("ORD-50004", "C-1004", [("KB-7730", 1)], None, 0, "shipped", "2026-02-27", None),
    ("ORD-50005", "C-1005", [("MS-3170", 1)], None, 0, "placed", "2026-03-01", None),
    ("ORD-50006", "C-1002", [("MN-2705", 1)], "FLAT25", 2500, "delivered", "2026-02-06",
     "2026-02-10"),
    ("ORD-50007", "C-1006", [("GC-0100", 1)], None, 0, "delivered", "2026-02-24", "2026-02-25"),
]
# fmt: on


def _order(
    products: dict[str, Product],
    row: OrderRow,
    address: str,
) -> Order:
    order_id, customer_id, items, coupon, discount, status, placed, delivered = row
    lines = [
        OrderLine(
            sku=sku,
            name=products[sku].name,
            quantity=qty,
            unit_price_cents=products[sku].price_cents,
            line_total_cents=products[sku].price_cents * qty,
        )
        for sku, qty in items
    ]
    subtotal = sum(line.line_total_cents for line in lines)
    shipping = shipping_for(subtotal - discount)
    return Order(
        order_id=order_id,
        customer_id=customer_id,
        lines=lines,
        subtotal_cents=subtotal,
        discount_cents=discount,
        shipping_cents=shipping,
        total_cents=subtotal - discount + shipping,
        coupon_code=coupon,
        shipping_address=address,
        status=status,
        placed_at=f"{placed}T14:00:00Z",
        delivered_on=delivered,
        tracking_number=None if status == "placed" else f"1Z999AA1{order_id[-5:]}6784",
    )


def make_default_state() -> ShopState:
    products: dict[str, Product] = {}
    inventory: dict[str, Stock] = {}
    for sku, name, brand, category, price, rating, stock, restock, attrs in _PRODUCTS:
        products[sku] = Product(
            sku=sku,
            name=name,
            brand=brand,
            category=category,
            price_cents=price,
            rating=rating,
            returnable=not attrs.get("final_sale", False),
            attributes=attrs,
        )
        inventory[sku] = Stock(
            on_hand=stock,
            warehouse="Reno, NV" if stock % 2 else "Columbus, OH",
            restock_date=restock,
        )
    customers = {
        cid: Customer(
            customer_id=cid,
            name=name,
            email=f"{name.lower().replace(' ', '.')}@example.com",
            default_address=address,
        )
        for cid, name, address in _CUSTOMERS
    }
    orders: dict[str, Order] = {}
    for row in _ORDERS:
        order = _order(products, row, customers[row[1]].default_address)
        orders[order.order_id] = order
        customers[order.customer_id].orders_count += 1
    return ShopState(
        products=products,
        inventory=inventory,
        customers=customers,
        coupons={c.code: c for c in _COUPONS},
        orders=orders,
    )
